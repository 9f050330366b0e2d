#include "comm/rack_agent.h"

#include <arpa/inet.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>

#include "algo/engine/context.h"
#include "algo/engine/engine.h"
#include "comm/plan_sync.h"
#include "core/log.h"
#include "ina/path_mtu.h"
#include "ina/sender_choice.h"
#include "ina/uc_sender.h"
#include "rina/ina_wire.h"
#include "transport/verbs/rdma_setup.h"
#include "transport/verbs/uc_queue_pair.h"

namespace rina::comm {

using algo::RecvItem;
using algo::SendItem;

namespace {

constexpr uint32_t kSetupMagic = 0x52494e41;  // "RINA"
constexpr uint8_t kPriority = 1;
// REGISTERs an agent tries, each with a fresh job id, while the switch says
// the id is taken; then the rack does without the switch.
constexpr int kJobTries = 4;

// Agent <-> worker: the worker's UDP address (to the agent), then the
// rack's mode and grant (to the workers), at setup and at the start of each
// collective that uses the switch.
struct RackSetupMsg {
  uint32_t magic = kSetupMagic;
  uint32_t addr = 0;
  uint16_t port = 0;
  uint8_t active = 0;
  uint8_t regrant = 0;
  uint32_t base = 0;
  uint32_t length = 0;
  uint32_t payload = 0;
  uint16_t dataPort = 0;
  uint16_t ports = 0;
  uint16_t job = 0;
  // Worker to agent: its route's MTU towards the switch (clamped to 65535;
  // 0: unknown), which an INA datagram must fit.
  uint16_t pathMtu = 0;
  uint64_t token = 0;  // the job's, with job (at setup)
};
static_assert(sizeof(RackSetupMsg) == 40);

void putGrant(const ina::Grant& g, RackSetupMsg* m) {
  m->base = g.base;
  m->length = g.length;
  m->payload = g.payloadElems;
  m->dataPort = g.port;
  m->ports = g.ports;
  m->job = g.job;
}

ina::Grant grantOf(const RackSetupMsg& m) {
  ina::Grant g;
  g.job = m.job;
  g.base = m.base;
  g.length = m.length;
  g.payloadElems = m.payload;
  g.port = m.dataPort;
  g.ports = m.ports;
  return g;
}

// The local IPv4 address the kernel would use to reach addr.
uint32_t localAddressTowards(uint32_t addr) {
  if ((addr >> 24) == 127) return 0x7F000001;
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in to = ina::Endpoint{addr, 9}.toSockaddr();
  sockaddr_in me{};
  socklen_t len = sizeof me;
  uint32_t out = 0;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&me), &len) == 0) {
    out = ntohl(me.sin_addr.s_addr);
  }
  ::close(fd);
  return out;
}

Status checkSetup(const RackSetupMsg& m, int rank, int peer) {
  if (m.magic != kSetupMagic) {
    return errorf(rinaInternalError, "rank %d: rank %d sent a corrupt INA rack message", rank,
                  peer);
  }
  return {};
}

// The backend this worker sends to the switch with (RINA_INA_TRANSPORT,
// ina/sender_choice.h). *out stays null for UDP; one INFO line says which
// and why. A UC queue pair that cannot be made falls back to UDP under auto
// and is an error under rdma.
Status pickSender(int rank, const config::Options& options, const std::string& rackName,
                  uint32_t switchAddr, std::unique_ptr<ina::InaSender>* out, bool* required) {
  namespace verbs = transport::verbs;
  verbs::TransportChoice rdma;  // the adapter peers use too
  RINA_TRY(verbs::chooseDevice(rank, options, &rdma));
  ina::InaTransportChoice choice;
  RINA_TRY(ina::chooseInaTransport(options.inaTransport,
                                   ina::RdmaAvailability{rdma.useVerbs, rdma.whyNotRdma},
                                   switchAddr, &choice)
               .prepend("rank " + std::to_string(rank) + ": "));
  *required = choice.required;
  std::string why = choice.why;
  if (choice.transport == ina::InaTransport::kRdmaUc) {
    const verbs::VerbsOptions vo = verbs::verbsOptionsOf(rank, options);
    verbs::VerbsContextPtr ctx;
    std::unique_ptr<verbs::UcQueuePair> qp;
    Status s = verbs::openVerbsContext(rdma, vo, &ctx);
    if (s.ok()) s = verbs::openUcQueuePair(ctx, &qp);
    if (s.ok()) {
      RINA_INFO("rank %d: rack %s: INA over RDMA UC: %s", rank, rackName.c_str(), why.c_str());
      *out = ina::makeUcSender(std::move(qp), switchAddr);
      return {};
    }
    if (choice.required) return s.prepend("RINA_INA_TRANSPORT=rdma: ");
    why = s.message();
  }
  RINA_INFO("rank %d: rack %s: INA over UDP: %s", rank, rackName.c_str(), why.c_str());
  return {};
}

std::function<uint16_t()>& jobIdSource() {
  static std::function<uint16_t()> source;
  return source;
}

Status randomBytes(void* out, size_t len) {
  char* p = static_cast<char*>(out);
  while (len > 0) {
    const ssize_t n = ::getrandom(p, len, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return systemErrorf(errno, "getrandom");
    }
    p += n;
    len -= static_cast<size_t>(n);
  }
  return {};
}

// A job id (1..65535) and a token (64 bits, never 0), random.
Status drawJobId(uint16_t* job) {
  if (jobIdSource()) {
    *job = jobIdSource()();
    return {};
  }
  uint32_t r = 0;
  RINA_TRY(randomBytes(&r, sizeof r));
  *job = static_cast<uint16_t>(1 + r % 65535);
  return {};
}

Status drawToken(uint64_t* token) {
  do {
    RINA_TRY(randomBytes(token, sizeof *token));
  } while (*token == 0);
  return {};
}

}  // namespace

void setJobIdSourceForTesting(std::function<uint16_t()> source) {
  jobIdSource() = std::move(source);
}

Status parseSwitchList(const std::string& text, int inaRacks, std::vector<ina::Endpoint>* out) {
  out->clear();
  if (text == "auto" || text.empty()) return {};
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    std::string item = text.substr(pos, comma - pos);
    ina::Endpoint e;
    if (!ina::parseEndpoint(item, &e) || e.port == 0) {
      return errorf(rinaInvalidArgument,
                    "RINA_SWITCH=%s: entry %zu '%s' is not ipv4:port (or use 'auto')", text.c_str(),
                    out->size(), item.c_str());
    }
    out->push_back(e);
    pos = comma + 1;
  }
  if (static_cast<int>(out->size()) != inaRacks) {
    return errorf(rinaInvalidArgument,
                  "RINA_SWITCH=%s lists %zu switch(es) but the rack map has %d INA rack(s); give "
                  "one CTRL address per INA rack, in rack order, or 'auto'",
                  text.c_str(), out->size(), inaRacks);
  }
  return {};
}

namespace {

// Every INA rack names its switch (a map made from another communicator's,
// or a topology file's): RINA_SWITCH's list is not read.
bool switchesPinned(const topo::RackMap& map) {
  return std::all_of(map.racks.begin(), map.racks.end(),
                     [](const topo::Rack& r) { return !r.ina || !r.switchCtrl.empty(); });
}

}  // namespace

Status pinSwitches(const std::string& switches, topo::RackMap* map) {
  if (switchesPinned(*map)) return {};
  int inaRacks = 0;
  for (const topo::Rack& r : map->racks) inaRacks += r.ina ? 1 : 0;
  std::vector<ina::Endpoint> list;
  RINA_TRY(parseSwitchList(switches, inaRacks, &list));
  if (list.empty()) return {};
  int ordinal = 0;
  for (topo::Rack& r : map->racks) {
    if (!r.ina) continue;
    if (r.switchCtrl.empty()) r.switchCtrl = list[ordinal].toString();
    ++ordinal;
  }
  return {};
}

namespace {

// How many racks of the map have a switch, and which of them (*ordinal)
// rackIndex is.
void countInaRacks(const topo::RackMap& map, int rackIndex, int* inaRacks, int* ordinal) {
  for (int i = 0; i < static_cast<int>(map.racks.size()); ++i) {
    if (!map.racks[i].ina) continue;
    if (i == rackIndex) *ordinal = *inaRacks;
    ++*inaRacks;
  }
}

Status checkRackSize(const topo::Rack& rack) {
  const int k = static_cast<int>(rack.ranks.size());
  if (k > static_cast<int>(ina::kMaxFanIn)) {
    return errorf(rinaInvalidUsage, "rack %s has %d ranks; an INA rack holds at most %u",
                  rack.name.c_str(), k, ina::kMaxFanIn);
  }
  return {};
}

// A worker's first setup message: its UDP member address and its path MTU
// towards the switch.
RackSetupMsg memberMsg(const ina::Endpoint& local, uint32_t switchAddr) {
  RackSetupMsg m{};
  m.addr = local.addr;
  m.port = local.port;
  m.pathMtu = static_cast<uint16_t>(std::min<uint32_t>(ina::pathMtuTowards(switchAddr), 65535));
  return m;
}

// Agent: every worker's member address, this rank's (mine) first, and the
// smallest path MTU they reported (*pathMtu, 0: none; *mtuWorker its worker).
Status gatherMembers(algo::Context& ctx, const topo::Rack& rack, const RackSetupMsg& mine,
                     std::vector<ina::Endpoint>* members, uint32_t* pathMtu, int* mtuWorker) {
  const int k = static_cast<int>(rack.ranks.size());
  std::vector<RackSetupMsg> in(k);
  in[0] = mine;
  std::vector<RecvItem> recvs;
  for (int w = 1; w < k; ++w) {
    recvs.push_back(RecvItem{.conn = ctx.peer(rack.ranks[w]),
                             .dst = reinterpret_cast<char*>(&in[w]),
                             .len = sizeof(RackSetupMsg),
                             .step = 1,
                             .slice = w});
  }
  RINA_TRY(algo::runExchange(algo::contextFor(ctx, "INA setup", 0), {}, std::move(recvs)));
  for (int w = 0; w < k; ++w) {
    RINA_TRY(checkSetup(in[w], ctx.rank(), rack.ranks[w]));
    members->push_back(ina::Endpoint{in[w].addr, in[w].port});
    if (in[w].pathMtu != 0 && (*pathMtu == 0 || in[w].pathMtu < *pathMtu)) {
      *pathMtu = in[w].pathMtu;
      *mtuWorker = w;
    }
  }
  return {};
}

// Agent: msg to every other worker of the rack.
Status sendToWorkers(algo::Context& ctx, const topo::Rack& rack, const RackSetupMsg& msg,
                     const char* what, uint64_t seq, int step) {
  std::vector<SendItem> sends;
  for (int w = 1; w < static_cast<int>(rack.ranks.size()); ++w) {
    sends.push_back(SendItem{.conn = ctx.peer(rack.ranks[w]),
                             .data = reinterpret_cast<const char*>(&msg),
                             .len = sizeof msg,
                             .step = step,
                             .slice = w});
  }
  return algo::runExchange(algo::contextFor(ctx, what, seq), std::move(sends), {});
}

}  // namespace

Status RackAgent::setup(algo::Context& ctx, const config::Options& options,
                        std::unique_ptr<RackAgent>* out) {
  const topo::RackMap& map = ctx.racks();
  const int rackIndex = map.rackOf[ctx.rank()];
  int inaRacks = 0, ordinal = -1;
  countInaRacks(map, rackIndex, &inaRacks, &ordinal);
  std::vector<ina::Endpoint> switches;
  const topo::Rack& rack = map.racks[rackIndex];
  if (!switchesPinned(map)) RINA_TRY(parseSwitchList(options.switches, inaRacks, &switches));
  if (!rack.ina || rack.ranks.size() < 2) return {};
  RINA_TRY(checkRackSize(rack));
  std::unique_ptr<RackAgent> ri(new RackAgent());
  ri->takeOptions(ctx, rack, options);
  bool autoSwitch = false;
  RINA_TRY(ri->chooseController(switches, ordinal, &autoSwitch));
  RINA_TRY(ri->openClient(ctx, options));
  if (ctx.rank() == rack.ranks.front()) {
    RINA_TRY(ri->setUpAsAgent(ctx, autoSwitch));
  } else {
    RINA_TRY(ri->setUpAsWorker(ctx));
  }
  *out = std::move(ri);
  return {};
}

Status RackAgent::reform(algo::Context& ctx, const config::Options& options,
                         std::unique_ptr<RackAgent> old, std::unique_ptr<RackAgent>* out) {
  const topo::RackMap& map = ctx.racks();
  const topo::Rack& rack = map.racks[map.rackOf[ctx.rank()]];
  const bool agent = ctx.rank() == rack.ranks.front();
  if (old && agent) releaseOldJob(ctx, *old);
  if (!rack.ina || rack.ranks.size() < 2) return {};  // old goes, with its switch
  int inaRacks = 0, ordinal = -1;
  countInaRacks(map, map.rackOf[ctx.rank()], &inaRacks, &ordinal);
  std::vector<ina::Endpoint> switches;
  if (!switchesPinned(map)) RINA_TRY(parseSwitchList(options.switches, inaRacks, &switches));
  RINA_TRY(checkRackSize(rack));
  std::unique_ptr<RackAgent> ri(new RackAgent());
  ri->takeOptions(ctx, rack, options);
  bool autoSwitch = false;
  if (agent && old && old->ctrl_ && !old->ctrl_->closed()) {
    // The same switch, over the same CTRL connection (and local switch).
    ri->controller_ = old->controller_;
    ri->ctrl_ = std::move(old->ctrl_);
    ri->switchd_ = std::move(old->switchd_);
  } else {
    RINA_TRY(ri->chooseController(switches, ordinal, &autoSwitch));
  }
  old.reset();
  RINA_TRY(ri->openClient(ctx, options));
  if (agent) {
    RINA_TRY(ri->setUpAsAgent(ctx, autoSwitch));
  } else {
    RINA_TRY(ri->setUpAsWorker(ctx));
  }
  *out = std::move(ri);
  return {};
}

void RackAgent::releaseOldJob(algo::Context& ctx, RackAgent& old) {
  if (old.ctrl_) {
    // The old agent: its job, unless it was released at a fallback.
    if (old.registered_ && !old.released_ && !old.ctrl_->closed()) {
      Status s = old.ctrl_->release(old.job_, old.token_);
      old.released_ = true;
      if (!s.ok()) {
        RINA_INFO("rank %d: rack %s: RELEASE of the old INA job %u failed: %s", ctx.rank(),
                  old.rack_->name.c_str(), old.job_, s.message().c_str());
      }
    }
    return;
  }
  // A worker: the agent that registered the job failed; the job and token
  // came with its grant. A local switch (port 0 here) ended with its agent.
  if (!old.active_ || old.job_ == 0 || old.controller_.port == 0) return;
  std::unique_ptr<ina::CtrlClient> ctrl;
  Status s = ina::CtrlClient::connect(old.controller_, old.timeoutMs_, &ctrl, old.switchAuth_);
  if (s.ok()) s = ctrl->release(old.job_, old.token_);
  if (s.ok()) {
    RINA_INFO("rank %d: rack %s: released INA job %u of the failed agent", ctx.rank(),
              old.rack_->name.c_str(), old.job_);
  } else {
    RINA_INFO("rank %d: rack %s: the failed agent's INA job %u not released: %s", ctx.rank(),
              old.rack_->name.c_str(), old.job_, s.message().c_str());
  }
}

void RackAgent::takeOptions(algo::Context& ctx, const topo::Rack& rack,
                            const config::Options& options) {
  rack_ = &rack;
  for (int w = 0; w < static_cast<int>(rack.ranks.size()); ++w) {
    if (rack.ranks[w] == ctx.rank()) worker_ = w;
  }
  timeoutMs_ = static_cast<int>(options.inaTimeoutMs);     // checked: 1 to INT32_MAX
  slotsWanted_ = static_cast<uint32_t>(options.inaSlots);  // checked: 1 to 16384
  switchdPath_ = options.switchdPath;
  switchdArgs_ = options.switchdArgs;
  switchAuth_ = options.switchAuth;
}

Status RackAgent::chooseController(const std::vector<ina::Endpoint>& switches, int ordinal,
                                   bool* autoSwitch) {
  if (!rack_->switchCtrl.empty()) {
    if (!ina::parseEndpoint(rack_->switchCtrl, &controller_)) {
      return errorf(rinaInvalidArgument, "rack %s: switch '%s' is not ipv4:port",
                    rack_->name.c_str(), rack_->switchCtrl.c_str());
    }
  } else if (!switches.empty()) {
    controller_ = switches[ordinal];
  } else {
    *autoSwitch = true;
    controller_ = ina::Endpoint{0x7F000001, 0};
  }
  return {};
}

Status RackAgent::openClient(algo::Context& ctx, const config::Options& options) {
  // The job id and token are the agent's to draw (random: two communicators
  // on one switch, even with one RINA_COMM_ID, hold different jobs); the
  // workers learn them with the grant. The client starts without them.
  ina::InaClientOptions o;
  o.switchAddr = controller_.addr;
  o.local = ina::Endpoint{localAddressTowards(o.switchAddr), 0};
  o.worker = static_cast<uint8_t>(worker_);
  o.fanIn = static_cast<uint8_t>(rack_->ranks.size());
  o.switchTimeoutMs = timeoutMs_;
  RINA_TRY(ina::paceBytesPerSec(options.inaPace, rack_->hostLinkMbit, &o.paceBytesPerSec)
               .prepend("rank " + std::to_string(ctx.rank()) + ": "));
  std::unique_ptr<ina::InaSender> sender;
  bool required = false;
  RINA_TRY(pickSender(ctx.rank(), options, rack_->name, o.switchAddr, &sender, &required));
  o.udpFallback = !required;
  return ina::InaClient::create(o, &client_, std::move(sender))
      .prepend("rank " + std::to_string(ctx.rank()) + ": ");
}

Status RackAgent::setUpAsAgent(algo::Context& ctx, bool autoSwitch) {
  RINA_TRY(gatherMembers(ctx, *rack_, memberMsg(client_->localEndpoint(), controller_.addr),
                         &members_, &pathMtu_, &pathMtuWorker_));
  ina::Grant grant;
  std::string why;
  Status s = registerJob(ctx, members_, autoSwitch, &grant, &why);
  RackSetupMsg reply{};
  if (s.ok() && why.empty()) {
    reply.active = 1;
    putGrant(grant, &reply);
    reply.job = job_;
    reply.token = token_;
    RINA_TRY(client_->setJob(job_, token_));
    RINA_TRY(client_->setGrant(grant));
    active_ = true;
    RINA_INFO("rank %d: rack %s: INA job %u on switch %s: %u slots from %u, payload %u", ctx.rank(),
              rack_->name.c_str(), job_, controller_.toString().c_str(), grant.length, grant.base,
              grant.payloadElems);
  } else {
    active_ = true;  // so that fallBack logs and counts it
    fallBack(ctx, s.ok() ? why : s.message(), true);
  }
  return sendToWorkers(ctx, *rack_, reply, "INA setup", 0, 2);
}

Status RackAgent::setUpAsWorker(algo::Context& ctx) {
  const int agent = rack_->ranks.front();
  const RackSetupMsg mine = memberMsg(client_->localEndpoint(), controller_.addr);
  RackSetupMsg reply{};
  RINA_TRY(algo::runExchange(algo::contextFor(ctx, "INA setup", 0),
                             {SendItem{.conn = ctx.peer(agent),
                                       .data = reinterpret_cast<const char*>(&mine),
                                       .len = sizeof mine,
                                       .step = 1}},
                             {RecvItem{.conn = ctx.peer(agent),
                                       .dst = reinterpret_cast<char*>(&reply),
                                       .len = sizeof reply,
                                       .step = 2}}));
  RINA_TRY(checkSetup(reply, ctx.rank(), agent));
  if (!reply.active) {
    active_ = true;
    fallBack(ctx, "the agent could not use the switch (its WARN says why)", false);
    return {};
  }
  job_ = reply.job;
  token_ = reply.token;
  RINA_TRY(client_->setJob(reply.job, reply.token)
               .prepend("rank " + std::to_string(ctx.rank()) + ": from the agent: "));
  RINA_TRY(client_->setGrant(grantOf(reply)));
  active_ = true;
  return {};
}

Status RackAgent::startLocalSwitchd(algo::Context& ctx) {
  std::string path;
  RINA_TRY(ina::findSwitchd(switchdPath_, &path));
  // A process start on a busy host can take seconds: up to half the wait
  // for a peer, so the workers still hear from the agent (a fallback at
  // worst) before they give up on it.
  const int64_t startMs = std::max<int64_t>(ctx.timeoutMs() / 2, timeoutMs_ + 5000);
  // Sized for the job: the slots it asks for (8192 slots of 2048 elements
  // took 139 MB and seconds to start; 128 take 9 MB); RINA_SWITCHD_ARGS
  // comes after, so --slots there wins.
  std::vector<std::string> args = {"--slots", std::to_string(slotsWanted_)};
  for (std::string& a : ina::splitArgs(switchdArgs_)) args.push_back(std::move(a));
  RINA_TRY(ina::LocalSwitchd::start(
      path, args, static_cast<int>(std::min<int64_t>(startMs, INT32_MAX)), &switchd_));
  controller_ = switchd_->control();
  RINA_INFO("rank %d: rack %s: started %s (pid %d), control %s", ctx.rank(), rack_->name.c_str(),
            path.c_str(), static_cast<int>(switchd_->pid()), controller_.toString().c_str());
  return {};
}

Status RackAgent::registerJob(algo::Context& ctx, const std::vector<ina::Endpoint>& members,
                              bool autoSwitch, ina::Grant* grant, std::string* why) {
  if (!ctrl_) {
    if (autoSwitch) RINA_TRY(startLocalSwitchd(ctx));
    // A local switch's secret is the one it was started with (found by its
    // control address); a listed switch's is the file these options name
    // (not necessarily the environment's: a communicator may be made with
    // its own knobs).
    RINA_TRY(ina::CtrlClient::connect(controller_, timeoutMs_, &ctrl_,
                                      autoSwitch ? std::string() : switchAuth_));
  }
  ina::CtrlRequest reg;
  reg.verb = ina::CtrlVerb::kRegister;
  RINA_TRY(drawToken(&token_));
  reg.token = token_;
  reg.fanIn = static_cast<uint8_t>(members.size());
  reg.priority = kPriority;
  reg.slots = slotsWanted_;
  reg.members = members;
  // Another job holds the id (another communicator drew it too): the switch
  // keeps it for its owner, and the agent draws again, a few times.
  RINA_TRY(drawJobId(&job_));
  for (int attempt = 1;; ++attempt) {
    reg.job = job_;
    bool taken = false;
    Status s = ctrl_->registerJob(reg, grant, &taken);
    if (s.ok()) {
      registered_ = true;
      break;
    }
    if (!taken) return s;
    if (attempt == kJobTries) {
      *why = "INA job " + std::to_string(job_) + " is taken on switch " + controller_.toString() +
             " (another job holds it), as were the " + std::to_string(kJobTries - 1) +
             " job ids drawn before it";
      return {};
    }
    const uint16_t refused = job_;
    RINA_TRY(drawJobId(&job_));
    RINA_INFO(
        "rank %d: rack %s: INA job %u is taken on switch %s (another job holds it); trying "
        "job %u",
        ctx.rank(), rack_->name.c_str(), refused, controller_.toString().c_str(), job_);
  }
  if (grant->length == 0) {
    *why = "the switch has no free slots for the job (REGISTER granted 0)";
  } else if (pathMtu_ != 0 && ina::inaDatagramIpBytes(grant->payloadElems) > pathMtu_) {
    // IP would fragment every datagram: a switch cannot sum fragments, and
    // one lost fragment loses the datagram. The switch fixes the size.
    *why = "an INA datagram of " + std::to_string(grant->payloadElems) + " elements is " +
           std::to_string(ina::inaDatagramIpBytes(grant->payloadElems)) +
           " bytes on IP, more than the path MTU " + std::to_string(pathMtu_) + " of rank " +
           std::to_string(rack_->ranks[pathMtuWorker_]) + "'s route to switch " +
           controller_.toString() + " (IP would fragment it, and a switch cannot sum fragments); " +
           "raise the MTU or run the switch with --payload " +
           std::to_string(ina::payloadElemsFitting(pathMtu_)) + " or less";
    mtuRefused_ = true;
  }
  return {};
}

void RackAgent::releaseWithoutWaiting() {
  if (ctrl_ && registered_ && !released_) {
    released_ = true;
    (void)ctrl_->postRelease(job_, token_);
  }
}

RackAgent::~RackAgent() {
  if (ctrl_ && registered_ && !released_) (void)ctrl_->release(job_, token_);
}

static_assert(sizeof(algo::RackStart) == sizeof(RackSetupMsg));

bool RackAgent::startDue() const { return active_ || (plans_ && plans_->checks() != returnCheck_); }

Status RackAgent::startAsAgent(algo::Context& ctx, algo::RackStart* out) {
  RackSetupMsg msg{};
  ina::Grant g;
  if (!active_) {
    // A return is tried at a plan check after the fallback (not in the
    // start that tells the workers of it), or later when returns that
    // summed nothing backed off; the workers follow the start.
    const bool checkSinceFallback =
        !plans_ || plans_->checks() - fellBackAtCheck_ >= checksBetweenReturns_;
    returnCheck_ = plans_ ? plans_->checks() : 0;
    if (checkSinceFallback && tryReturn(ctx, &g)) {
      msg.regrant = 1;
      putGrant(g, &msg);
      msg.job = job_;
      msg.token = token_;
    }
  } else {
    const bool preempted = checkSwitch(ctx);
    if (preempted && active_ && requestSlotsAgain(ctx, &g)) {
      msg.regrant = 1;
      putGrant(g, &msg);
    }
  }
  msg.active = active_ ? 1 : 0;
  std::memcpy(out->words, &msg, sizeof msg);
  return {};
}

Status RackAgent::takeStart(algo::Context& ctx, const algo::RackStart& in, int agent) {
  RackSetupMsg msg;
  std::memcpy(static_cast<void*>(&msg), in.words, sizeof msg);
  RINA_TRY(checkSetup(msg, ctx.rank(), agent));
  if (!active_) {
    returnCheck_ = plans_ ? plans_->checks() : 0;
    if (!msg.active) return {};
    // Back on the switch, with the job the agent registered anew.
    job_ = msg.job;
    token_ = msg.token;
    RINA_TRY(client_->setJob(msg.job, msg.token)
                 .prepend("rank " + std::to_string(ctx.rank()) + ": from the agent: "));
    RINA_TRY(client_->setGrant(grantOf(msg)));
    returned(ctx);
    return {};
  }
  if (!msg.active) {
    fallBack(ctx, "the agent lost the switch", false);
  } else if (msg.regrant) {
    RINA_TRY(client_->setGrant(grantOf(msg)));
    ++counters_.regrants;
  }
  return {};
}

bool RackAgent::tryReturn(algo::Context& ctx, ina::Grant* g) {
  // A local switch (RINA_SWITCH=auto) went with whatever ended it; a path
  // whose MTU the switch's datagrams do not fit stays so.
  if (switchd_ || controller_.port == 0 || members_.empty() || mtuRefused_) return false;
  // A switch that is down refuses at once; one that cannot be reached costs
  // this collective at most this much.
  constexpr int kReturnConnectMs = 500;
  if (!ctrl_ || ctrl_->closed() || released_) {
    ctrl_.reset();
    // One attempt: a switch that is still down refuses at once (the CTRL
    // client's connect would retry until its timeout at every check).
    const sockaddr_in to = controller_.toSockaddr();
    Fd probe;
    Status s = connectOnce(PackedAddr::fromSockaddr(reinterpret_cast<const sockaddr*>(&to)),
                           deadlineAfterMs(std::min(timeoutMs_, kReturnConnectMs)), &probe);
    probe.reset();
    if (s.ok()) {
      s = ina::CtrlClient::connect(controller_, std::min(timeoutMs_, kReturnConnectMs), &ctrl_,
                                   switchAuth_);
    }
    if (!s.ok()) {
      RINA_TRACE("rank %d: rack %s: the switch %s is not back: %s", ctx.rank(), rack_->name.c_str(),
                 controller_.toString().c_str(), s.message().c_str());
      ctrl_.reset();
      return false;
    }
  }
  registered_ = released_ = regranted_ = false;
  std::string why;
  Status s = registerJob(ctx, members_, false, g, &why);
  if (s.ok() && why.empty()) s = client_->setJob(job_, token_);
  if (s.ok() && why.empty()) s = client_->setGrant(*g);
  if (!s.ok() || !why.empty()) {
    RINA_INFO("rank %d: rack %s: the switch %s answers but took no job: %s", ctx.rank(),
              rack_->name.c_str(), controller_.toString().c_str(),
              s.ok() ? why.c_str() : s.message().c_str());
    if (registered_) {
      released_ = true;
      (void)ctrl_->postRelease(job_, token_);
    }
    ctrl_.reset();
    return false;
  }
  RINA_WARN("rank %d: rack %s: back on its switch %s (INA job %u, %u slots) after a fallback",
            ctx.rank(), rack_->name.c_str(), controller_.toString().c_str(), job_, g->length);
  returned(ctx);
  return true;
}

void RackAgent::returned(algo::Context& ctx) {
  active_ = true;
  returnedOnce_ = true;
  counters_.returns++;
}

bool RackAgent::checkSwitch(algo::Context& ctx) {
  bool preempted = preemptSeen_;
  preemptSeen_ = false;
  for (const ina::PreemptNotice& n : ctrl_->takeNotices()) preempted |= n.job == job_;
  // NACKs prove a preemption too; the notice is best effort and may come
  // after a collective that went fast (all slices on the hosts).
  preempted |= client_->lostSlots();
  std::string how;
  if (active_ && switchd_ && switchd_->exited(&how)) {
    fallBack(ctx, "the local rina-switchd (pid " + std::to_string(switchd_->pid()) + ") " + how,
             true);
  }
  if (ctrl_->closed() && active_) {
    fallBack(ctx, "the switch closed its CTRL connection (" + controller_.toString() + ")", true);
  }
  if (preempted && active_ && regranted_ && !client_->resultSinceGrant()) {
    // Asking again brought slots that were NACKed too, with no result in
    // between: a switch that NACKs whatever it grants (or a preemption
    // that never ends) is no progress; REQUEST at every collective would
    // not end it.
    fallBack(ctx,
             "the switch NACKed the slots of the grant it gave after a preemption, with no "
             "result in between (" +
                 controller_.toString() + ")",
             true);
  }
  return preempted;
}

Status RackAgent::checkWhileIdle(algo::Context& ctx) {
  if (!ctrl_ || !active_) return {};
  for (const ina::PreemptNotice& n : ctrl_->takeNotices()) preemptSeen_ |= n.job == job_;
  std::string how, why;
  if (switchd_ && switchd_->exited(&how)) {
    why = "the local rina-switchd (pid " + std::to_string(switchd_->pid()) + ") " + how;
  } else if (ctrl_->closed()) {
    why = "the switch closed its CTRL connection (" + controller_.toString() + ")";
  }
  if (why.empty()) return {};
  fallBack(ctx, why, true);
  return errorf(rinaRemoteError,
                "rank %d: rack %s lost its switch: %s; the rack aggregates on its hosts from "
                "its next call on (calls go on)",
                ctx.rank(), rack_->name.c_str(), why.c_str());
}

bool RackAgent::requestSlotsAgain(algo::Context& ctx, ina::Grant* g) {
  Status s = ctrl_->requestSlots(job_, token_, slotsWanted_, g);
  if (s.ok() && g->length == 0)
    s = errorf(rinaTimeout, "REQUEST after a preemption granted no slots");
  if (s.ok()) s = client_->setGrant(*g);
  if (!s.ok()) {
    fallBack(ctx, s.message(), true);
    return false;
  }
  regranted_ = true;
  ++counters_.regrants;
  RINA_INFO("rank %d: rack %s: slots preempted; new grant of %u slots from %u", ctx.rank(),
            rack_->name.c_str(), g->length, g->base);
  return true;
}

void RackAgent::countCall(const ina::InaCallStats& s, size_t hostSlices) {
  ++counters_.calls;
  ina::addCounts(s, &counters_.wire);
  counters_.hostSlices += hostSlices;
}

void RackAgent::fallBack(algo::Context& ctx, const std::string& why, bool seenHere) {
  if (!active_) return;
  active_ = false;
  ++counters_.fallbacks;
  fellBackAtCheck_ = plans_ ? plans_->checks() : 0;
  if (returnedOnce_ && client_ && !client_->resultSinceGrant()) {
    checksBetweenReturns_ = std::min(checksBetweenReturns_ * 2, kMostChecksBetweenReturns);
    RINA_INFO(
        "rank %d: rack %s: the switch summed nothing since the rack returned to it: the "
        "next return is tried %llu plan check(s) after this fallback",
        ctx.rank(), rack_->name.c_str(), static_cast<unsigned long long>(checksBetweenReturns_));
  } else {
    checksBetweenReturns_ = 1;
  }
  if (ctrl_ && registered_ && !released_) {
    // The rack never uses the switch again: its slots go back now, not at
    // rinaCommDestroy (a switch that times out may hold them for good).
    released_ = true;
    Status s = ctrl_->postRelease(job_, token_);
    if (!s.ok()) {
      RINA_INFO("rank %d: rack %s: INA job %u: RELEASE not sent: %s", ctx.rank(),
                rack_->name.c_str(), job_, s.message().c_str());
    }
  }
  if (seenHere) {
    RINA_WARN(
        "rank %d: rack %s: falling back to host aggregation (hier) for this and later "
        "collectives: %s",
        ctx.rank(), rack_->name.c_str(), why.c_str());
  } else {
    RINA_INFO("rank %d: rack %s: falling back to host aggregation (hier): %s", ctx.rank(),
              rack_->name.c_str(), why.c_str());
  }
}

}  // namespace rina::comm
