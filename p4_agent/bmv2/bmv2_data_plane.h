// The controller's DataPlane on a BMv2 simple_switch running
// p4/rina_v1model.p4: every control change becomes the table, register and
// multicast commands that `rina-switchctl ENTRIES` describes, sent through
// BMv2's runtime CLI (runtime_cli.h). So rina-switchd's Controller (CTRL
// protocol, authentication, ESA grants and preemption) drives BMv2 unchanged.
//
//   installJob   job_table, source_table and member_table entries, the
//                job's multicast group (one node per worker, rid = worker,
//                on the switch's port) and a neighbor_table entry per new
//                member address; the job's activity counter is cleared
//   removeJob    those entries and group deleted, the job's slots freed
//   assignSlots  slot_owner = job for each slot, slot_used = 0 for its two
//                sets (Pipeline::assignSlots resets both)
//   lastActivityMs  when the job's activity counter (datagrams past the
//                ownership check) was last seen to move; read at most once
//                per refresh period per job
//
// A command that fails (the switch is gone, the program is not
// rina_v1model.p4) is reported to the failure handler, which the tool uses
// to stop: a controller that cannot program its switch must not grant.
#ifndef RINA_P4_AGENT_BMV2_BMV2_DATA_PLANE_H_
#define RINA_P4_AGENT_BMV2_BMV2_DATA_PLANE_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "bmv2/neighbors.h"
#include "bmv2/runtime_cli.h"
#include "switchd/control.h"

namespace rina::bmv2 {

// The program's fixed sizes (rina_v1model.p4).
inline constexpr uint32_t kProgramSlots = 8192;
inline constexpr uint32_t kProgramPayloadElems = 64;
inline constexpr uint16_t kProgramDataPort = 9100;  // INA_UDP_PORT

struct Bmv2DataPlaneOptions {
  uint32_t totalSlots = kProgramSlots;  // the controller's; <= kProgramSlots
  uint32_t switchPort = 0;              // BMv2 port the answers leave by (one-armed)
  NeighborMap neighbors;                // known MACs; others from the kernel
  int resolveWaitMs = 1000;
  uint64_t activityRefreshMs = 100;
  std::function<uint64_t()> clockMs;  // the controller's clock (steadyNowMs)
  std::function<void(const Status&)> onFailure;
};

class Bmv2DataPlane : public switchd::DataPlane {
 public:
  Bmv2DataPlane(RuntimeCli& cli, Bmv2DataPlaneOptions options);

  // Checks the switch runs a program with rina_v1model.p4's tables and
  // registers, large enough for totalSlots, and clears every slot's owner.
  Status prepare();

  void installJob(const switchd::JobEntry& job) override;
  void removeJob(uint16_t job) override;
  void assignSlots(uint32_t begin, uint32_t end, uint16_t job) override;
  uint64_t lastActivityMs(uint16_t job) const override;
  std::string countersJson() const override;

  // The data plane's verdict and decode-error counters, by switchd's indices
  // (switchd::Verdict, ina::DecodeError).
  Status readCounters(std::vector<uint64_t>* verdicts, std::vector<uint64_t>* malformed) const;

 private:
  struct InstalledJob {
    std::vector<long> tableEntries;        // entry handles, and
    std::vector<std::string> entryTables;  // the table of each
    std::vector<long> nodes;               // multicast nodes, worker order
    std::vector<uint32_t> addresses;       // distinct member addresses
  };
  struct Activity {
    long long packets = -1;
    uint64_t changedMs = 0;
    uint64_t readMs = 0;
  };

  Status install(const switchd::JobEntry& job, InstalledJob* installed);
  Status uninstall(uint16_t id, const InstalledJob& installed);
  Status run(const std::vector<std::string>& commands, std::vector<std::string>* outputs) const;
  void fail(const Status& s) const;

  RuntimeCli& cli_;
  Bmv2DataPlaneOptions options_;
  std::map<uint16_t, InstalledJob> jobs_;
  std::map<uint32_t, std::pair<long, int>> neighborEntries_;  // addr -> (handle, jobs using it)
  std::vector<uint16_t> owner_;                               // per slot, as programmed
  mutable std::map<uint16_t, Activity> activity_;
};

}  // namespace rina::bmv2

#endif  // RINA_P4_AGENT_BMV2_BMV2_DATA_PLANE_H_
