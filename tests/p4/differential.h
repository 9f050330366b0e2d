// The differential harness: every CTRL line and every datagram goes to
// rina-switchd's pipeline (in process: switchd::Controller over a
// switchd::Pipeline) and to rina_v1model.p4 in BMv2 (the same Controller
// over bmv2::Bmv2DataPlane, frames through FilesSwitch). The controllers'
// replies must agree; the switch's answers are compared frame by frame: each
// of rina-switchd's answers (a destination and the datagram's bytes) becomes
// the frame the P4 program must send for it (from the switch's MAC, IPv4
// address and data port to the member's MAC and endpoint, the IPv4 fields an
// answer carries: rina_headers.p4), and the two sequences must be equal byte
// for byte. check() closes a phase: a sentinel datagram (a NACK for a job
// that owns no slot) is sent last, so once its NACK is out, every answer
// before it is too (one port, one egress queue).
#ifndef RINA_TESTS_P4_DIFFERENTIAL_H_
#define RINA_TESTS_P4_DIFFERENTIAL_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "bmv2/bmv2_data_plane.h"
#include "p4/files_switch.h"
#include "p4/frames.h"
#include "switchd/control.h"
#include "switchd/pipeline.h"

namespace rina::p4test {

struct Host {
  Mac mac{};
  ina::Endpoint ep;
};

inline constexpr uint32_t kManagedSlots = 64;  // the controllers grant from these
inline constexpr uint64_t kIdleMs = 2000;

class Differential {
 public:
  Differential(FilesSwitch& sw, const Mac& switchMac, uint32_t switchAddr,
               const bmv2::NeighborMap& hosts);
  ~Differential();
  Status prepare();

  // One CTRL line to both controllers; their replies and notices must agree.
  Status control(const std::string& line, std::string* reply = nullptr);
  // A datagram from a host to the switch's data port.
  Status send(const Host& from, std::span<const uint8_t> datagram, const std::string& what,
              const IpFields& ip = {});
  // A frame that is not an INA datagram for the switch: rina-switchd never
  // sees it (the kernel does not hand it to its socket); the P4 program must
  // not answer it.
  Status sendOther(const Frame& frame, const std::string& what);
  // The clock both pipelines and controllers see (ms), moved after a sync.
  Status advanceClock(uint64_t ms);
  uint64_t now() const { return nowMs_; }
  // Every answer since the last check must be equal; closesPhase: the
  // phase's counts (lastPhase*) end here.
  Status check(const std::string& phase, bool closesPhase = true);
  // The data planes' verdict and decode-error counters must be equal.
  Status compareCounters(std::string* summary);

  size_t datagrams() const { return datagrams_; }
  size_t answers() const { return expected_.size(); }
  // Of the phase the last check() closed (its sentinels included).
  size_t lastPhaseDatagrams() const { return lastPhaseDatagrams_; }
  size_t lastPhaseAnswers() const { return lastPhaseAnswers_; }
  const switchd::Pipeline& pipeline() const { return pipeline_; }

 private:
  class PipelinePlane;
  Status handle(const std::string& line, std::string* reply = nullptr);  // control(), no sync()
  Status sync();
  Status sample();

  FilesSwitch& switch_;
  Mac switchMac_;
  uint32_t switchAddr_;
  bmv2::NeighborMap hosts_;
  switchd::Pipeline pipeline_;
  std::unique_ptr<PipelinePlane> pipelinePlane_;
  std::unique_ptr<bmv2::Bmv2DataPlane> bmv2Plane_;
  std::unique_ptr<switchd::Controller> reference_;
  std::unique_ptr<switchd::Controller> underTest_;
  Status bmv2Failure_;
  uint64_t nowMs_ = 1000;
  uint16_t ipId_ = 1;
  std::vector<Frame> expected_;
  std::vector<size_t> causes_;     // per expected frame: the datagram it answers
  std::vector<std::string> sent_;  // every datagram's description, in order
  size_t checked_ = 0;             // expected frames compared so far
  size_t datagrams_ = 0, phaseStartDatagrams_ = 0, phaseStartAnswers_ = 0;
  size_t lastPhaseDatagrams_ = 0, lastPhaseAnswers_ = 0;
  Host sentinel_;
  uint32_t sentinelSeq_ = 0;
  std::vector<uint16_t> jobs_;  // registered, for activity samples
};

}  // namespace rina::p4test

#endif  // RINA_TESTS_P4_DIFFERENTIAL_H_
