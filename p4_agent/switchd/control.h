// The switch controller: job registration, slot grants with ESA preemption,
// release, stats and P4 table entries. Speaks the CTRL protocol
// (lib/wire/ctrl_protocol.h) one line at a time and changes the data plane
// through the small DataPlane interface, so it is tested without sockets.
//
// ESA policy: a request is served from free slots first; when they are short,
// it may take slots of a job that has been idle longer than the threshold
// (any priority) or of a job with strictly lower priority. Victims are chosen
// by cost: idle before busy, lower priority before higher. A victim is told
// (NOTICE PREEMPT), its datagrams to lost slots get NACK, it finishes those
// slices by host aggregation and may REQUEST again later.
#ifndef RINA_P4_AGENT_SWITCHD_CONTROL_H_
#define RINA_P4_AGENT_SWITCHD_CONTROL_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "switchd/pipeline.h"
#include "switchd/slot_allocator.h"
#include "wire/ctrl_protocol.h"

namespace rina::switchd {

class DataPlane {
 public:
  virtual ~DataPlane() = default;
  virtual void installJob(const JobEntry& job) = 0;
  virtual void removeJob(uint16_t job) = 0;
  virtual void assignSlots(uint32_t begin, uint32_t end, uint16_t job) = 0;
  virtual uint64_t lastActivityMs(uint16_t job) const = 0;
  // Data-plane counters as a JSON object (for STATS).
  virtual std::string countersJson() const = 0;
};

struct ControllerOptions {
  uint32_t totalSlots = 8192;
  uint32_t payloadElems = 64;
  uint16_t dataPort = 0;
  uint16_t dataPorts = 1;
  uint64_t idleThresholdMs = 2000;
  // The switch has an admin secret (--auth-file): REGISTER, RELEASE and
  // ENTRIES must be authenticated (lib/wire/ctrl_auth.h).
  bool authRequired = false;
  // A REGISTER above this priority must be authenticated (without a secret:
  // is refused), so no unauthenticated job can preempt by priority.
  uint8_t priorityCap = 255;
};

struct ControllerStats {
  uint64_t registrations = 0;
  uint64_t grants = 0;
  uint64_t grantedSlots = 0;
  uint64_t preemptions = 0;  // (victim, range) pieces taken
  uint64_t preemptedSlots = 0;
  uint64_t releases = 0;
  uint64_t rejected = 0;         // malformed or refused requests
  uint64_t unauthenticated = 0;  // refused for want of the admin secret
};

class Controller {
 public:
  Controller(const ControllerOptions& options, DataPlane& dataPlane);

  // Handles one request line; returns the reply line. Preemption notices for
  // victim jobs are appended to *notices (the caller delivers them). After a
  // successful REGISTER, *registered (if given) is the job id, else 0.
  // authenticated: the line carried a valid signature (the CTRL server
  // checked it and removed it).
  std::string handle(std::string_view line, uint64_t nowMs,
                     std::vector<ina::PreemptNotice>* notices, uint16_t* registered = nullptr,
                     bool authenticated = false);

  std::string statsJson(uint64_t nowMs) const;
  std::string entriesJson(uint16_t job) const;  // "" for an unknown job
  const ControllerStats& stats() const { return stats_; }
  const SlotAllocator& allocator() const { return allocator_; }

 private:
  struct Job {
    ina::CtrlRequest config;  // the REGISTER request
    uint32_t wanted = 0;
    uint64_t lastGrantMs = 0;
  };

  std::string grant(Job& job, uint32_t wanted, uint64_t nowMs,
                    std::vector<ina::PreemptNotice>* notices);
  bool idle(uint16_t job, uint64_t nowMs) const;
  std::string refuse(const std::string& why);

  ControllerOptions options_;
  DataPlane& dataPlane_;
  SlotAllocator allocator_;
  std::map<uint16_t, Job> jobs_;
  ControllerStats stats_;
};

}  // namespace rina::switchd

#endif  // RINA_P4_AGENT_SWITCHD_CONTROL_H_
