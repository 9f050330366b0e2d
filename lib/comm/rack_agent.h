// The INA side of one rack, as each of its workers holds it: the worker's
// InaClient (its UDP member address), the rack's mode (switch or host
// aggregation), and on the rack's agent (its lowest rank) the CTRL
// connection, the job's grant and, under RINA_SWITCH=auto, a local
// rina-switchd it started.
//
// The agent registers the job, hands the grant to the workers over the
// communicator's connections, reads the CTRL connection at the start of
// every collective that uses the switch (a NOTICE PREEMPT makes it REQUEST
// slots again and hand the new grant to every worker), and on a lost switch
// or refused slots the rack falls back to host aggregation (hier) for the
// rest of that collective and every later one; the agent then releases the
// job's slots (without waiting: a stopped switch takes the RELEASE when it
// resumes). A local switch (RINA_SWITCH=auto) that dies is reaped at once
// and makes the rack fall back at its next collective. Each worker learns a fallback
// from the rank that saw it (rack_task.cc), so the rack's workers always
// agree on the mode.
#ifndef RINA_LIB_COMM_RACK_AGENT_H_
#define RINA_LIB_COMM_RACK_AGENT_H_

#include <functional>
#include <memory>
#include <string>

#include "algo/engine/context.h"
#include "algo/rack/rack.h"
#include "core/config.h"
#include "ina/ctrl_client.h"
#include "ina/ina_client.h"
#include "ina/local_switchd.h"

namespace rina::comm {

class PlanSync;

// RINA_SWITCH: "auto" (empty list) or one ipv4:port per INA rack in rack
// order. rinaInvalidArgument naming the bad entry or the count mismatch.
Status parseSwitchList(const std::string& text, int inaRacks, std::vector<ina::Endpoint>* out);

// The rack map with each INA rack's switch written into it (Rack::switchCtrl)
// from RINA_SWITCH's list where the map had none, so a map cut or grown
// from it (rinaCommShrink, rinaCommSplit, rinaCommGrow) keeps every rack on
// its switch whichever racks keep INA. "auto" leaves them empty.
Status pinSwitches(const std::string& switches, topo::RackMap* map);

// Where an agent's INA job ids come from: getrandom, or for tests that make
// ids collide, source (null: getrandom again). Not thread-safe against
// communicators being created.
void setJobIdSourceForTesting(std::function<uint16_t()> source);

// The INA counters of rinaCommGetStats (include/rina/rina.h names each):
// this rank's switch calls, what they did on the wire, and its rack's
// fallbacks and re-grants.
struct InaCounters {
  uint64_t calls = 0;
  ina::InaCallStats wire;  // the calls' counts, added up
  uint64_t hostSlices = 0;
  uint64_t fallbacks = 0;
  uint64_t regrants = 0;
  uint64_t returns = 0;  // the rack went back to its switch after a fallback
};

class RackAgent final : public algo::RackSwitch {
 public:
  // Collective over the communicator, after its connections exist: every
  // rank calls it; *out stays null outside an INA rack of two or more.
  // options: RINA_SWITCH, RINA_INA_*, RINA_SWITCHD_*, RINA_IB_* (checked).
  // The agent draws the rack's job id and token (random) and hands them to
  // the workers with the grant.
  static Status setup(algo::Context& ctx, const config::Options& options,
                      std::unique_ptr<RackAgent>* out);
  // setup for a communicator made from another one by a shrink or a grow,
  // where old is this rank's part of the old communicator's rack (null:
  // none): the rack's job is a new one (new members, fan-in and token),
  // and the old one is released first, so its slots are free before the new
  // one asks. The agent keeps the old one's switch connection (and local
  // switch) when it was the old agent too; an agent that was a worker
  // releases the old job over a connection of its own (the old agent
  // failed). A rack left with one rank releases the old job and has no
  // agent.
  static Status reform(algo::Context& ctx, const config::Options& options,
                       std::unique_ptr<RackAgent> old, std::unique_ptr<RackAgent>* out);
  ~RackAgent();

  bool active() const override { return active_; }
  bool startDue() const override;
  // Plan checks (plans->checks()) are when a rack that fell back tries its
  // switch again; null: never.
  void followPlanChecks(const PlanSync* plans) { plans_ = plans; }
  ina::SwitchCalls& calls() override { return *client_; }
  // The switch as this worker's reduce calls met it (plan_sync.h's switch row).
  const transport::LinkCounters& switchCounters() const { return client_->switchCounters(); }
  void countCall(const ina::InaCallStats& s, size_t hostSlices) override;
  void countHostSlices(size_t n) override { counters_.hostSlices += n; }
  const InaCounters& counters() const { return counters_; }

  // At the start of a collective that uses the switch: the agent applies
  // pushed notices and writes the mode and, after a re-grant, the new grant
  // (startAsAgent); each worker takes them (takeStart).
  Status startAsAgent(algo::Context& ctx, algo::RackStart* out) override;
  Status takeStart(algo::Context& ctx, const algo::RackStart& in, int agent) override;
  // This rack stops using the switch. The rank that saw the failure logs it
  // at WARN; every worker counts it.
  void fallBack(algo::Context& ctx, const std::string& why, bool seenHere) override;
  // Between calls (rinaCommGetAsyncError), on the agent: a switch that is
  // gone (its CTRL connection closed, a local switch exited) makes the rack
  // fall back now (the workers learn it at the next call's start) and is
  // returned as rinaRemoteError; ok otherwise, and on workers.
  Status checkWhileIdle(algo::Context& ctx);
  // The job's RELEASE goes without waiting for the switch's answer (a
  // communicator that was aborted or revoked is destroyed without
  // blocking on a switch that may be gone).
  void releaseWithoutWaiting();

 private:
  RackAgent() = default;
  // The steps of setup: this worker's knobs and place in the rack, the
  // switch's CTRL address (RINA_SWITCH, the rack map, or a local switch:
  // *autoSwitch), its InaClient, then the agent's or a worker's part of the
  // hand-over of the job and grant.
  void takeOptions(algo::Context& ctx, const topo::Rack& rack, const config::Options& options);
  Status chooseController(const std::vector<ina::Endpoint>& switches, int ordinal,
                          bool* autoSwitch);
  Status openClient(algo::Context& ctx, const config::Options& options);
  Status setUpAsAgent(algo::Context& ctx, bool autoSwitch);
  // reform: this rank's old job (as old knew it) released on the switch
  // now, over old's CTRL connection when it has one, else over one of its
  // own (the old agent is gone; a local switch went with it).
  static void releaseOldJob(algo::Context& ctx, RackAgent& old);
  Status setUpAsWorker(algo::Context& ctx);
  // Agent: starts a local switch when autoSwitch, connects CTRL, REGISTERs.
  // A refused grant sets *why (the rack then falls back).
  Status registerJob(algo::Context& ctx, const std::vector<ina::Endpoint>& members, bool autoSwitch,
                     ina::Grant* grant, std::string* why);
  Status startLocalSwitchd(algo::Context& ctx);
  // Agent, at the start of a collective: whether the switch took the job's
  // slots (a NOTICE, or NACKs); a local switch that died, a closed CTRL
  // connection or a re-grant that brought no result make the rack fall
  // back.
  bool checkSwitch(algo::Context& ctx);
  // Agent: REQUESTs slots again after a preemption and hands them to the
  // client; false (the rack fell back) when none came.
  bool requestSlotsAgain(algo::Context& ctx, ina::Grant* g);
  // Agent of a rack that fell back, at the first collective after a plan
  // check: a listed switch that answers again gets the rack's job anew (new
  // id and token, the same members); false when it does not.
  bool tryReturn(algo::Context& ctx, ina::Grant* g);
  // Every worker: the rack uses its switch again (from the agent's start).
  void returned(algo::Context& ctx);

  const topo::Rack* rack_ = nullptr;
  int worker_ = 0;
  bool active_ = false;
  int timeoutMs_ = 2000;
  uint32_t slotsWanted_ = 64;  // RINA_INA_SLOTS
  std::string switchdPath_;    // RINA_SWITCHD_PATH (RINA_SWITCH=auto)
  std::string switchdArgs_;    // RINA_SWITCHD_ARGS
  std::string switchAuth_;     // RINA_SWITCH_AUTH_FILE (switches in RINA_SWITCH)
  uint16_t job_ = 0;
  uint64_t token_ = 0;
  ina::Endpoint controller_;
  std::unique_ptr<ina::InaClient> client_;
  // Agent only.
  std::unique_ptr<ina::LocalSwitchd> switchd_;
  std::unique_ptr<ina::CtrlClient> ctrl_;
  bool registered_ = false;   // the switch holds the job (REGISTER answered OK)
  bool released_ = false;     // RELEASE sent (at the fallback)
  bool regranted_ = false;    // the grant in use came from a REQUEST after lost slots
  bool preemptSeen_ = false;  // a NOTICE PREEMPT read between calls, for the next call
  const PlanSync* plans_ = nullptr;
  uint64_t returnCheck_ = 0;      // plans_->checks() at the last start exchanged
  uint64_t fellBackAtCheck_ = 0;  // agent: plans_->checks() at the last fallback
  // Agent: plan checks from a fallback to the next return tried. Doubles
  // (to kMostChecksBetweenReturns) at each fallback of a return that
  // summed nothing (a switch that answers but never sums costs one INA
  // timeout per try); back to 1 after a return that summed.
  static constexpr uint64_t kMostChecksBetweenReturns = 64;
  uint64_t checksBetweenReturns_ = 1;
  bool returnedOnce_ = false;           // the last time the rack went on its switch was a return
  std::vector<ina::Endpoint> members_;  // agent: the workers' addresses, for a return
  // Agent: the smallest path MTU towards the switch any worker reported (0:
  // none known), and the worker that reported it.
  uint32_t pathMtu_ = 0;
  int pathMtuWorker_ = 0;
  bool mtuRefused_ = false;  // the switch's datagrams do not fit that MTU
  InaCounters counters_;
};

}  // namespace rina::comm

#endif  // RINA_LIB_COMM_RACK_AGENT_H_
