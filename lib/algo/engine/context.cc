#include "algo/engine/context.h"

#include <cstdlib>
#include <utility>

#include "plan/path_choice.h"
#include "transport/connection.h"
#include "transport/shm_group.h"

namespace rina::algo {

Context::Context(int rank, int nranks)
    : rank_(rank), nranks_(nranks), paths_(std::make_unique<plan::PathChoice>()) {}

Context::~Context() { std::free(scratch_); }

void Context::setPaths(std::unique_ptr<plan::PathChoice> paths, int spines,
                       std::vector<int> defaultSpines) {
  paths_ = std::move(paths);
  spines_ = spines;
  defaultSpines_ = std::move(defaultSpines);
}

void Context::setHostGroup(std::unique_ptr<transport::ShmGroup> group) {
  hostGroup_ = std::move(group);
}

std::unique_ptr<transport::ShmGroup> Context::releaseHostGroup() { return std::move(hostGroup_); }

void Context::addConnections(ConnectionMap fresh, SpineConnectionMap spine) {
  conns_.merge(fresh);
  spineConns_.merge(spine);
}

void Context::closeConnection(int peer) {
  auto it = conns_.find(peer);
  if (it == conns_.end()) return;
  const transport::LinkCounters& k = it->second->counters();
  stats_.closedBytesSent += k.bytes[static_cast<int>(transport::Direction::kSend)];
  stats_.closedBytesReceived += k.bytes[static_cast<int>(transport::Direction::kRecv)];
  conns_.erase(it);
}

ConnectionMap Context::releaseConnections(SpineConnectionMap* spine) {
  *spine = std::move(spineConns_);
  spineConns_.clear();
  ConnectionMap all = std::move(conns_);
  conns_.clear();
  return all;
}

int Context::hopSpine(int from, int to, int planSpine) const {
  return planSpine >= 0 && paths_->policy() == plan::PathPolicy::kPlanned
             ? planSpine
             : paths_->spineFor(from, to);
}

transport::Connection* Context::peer(int r) const {
  auto it = conns_.find(r);
  return it == conns_.end() ? nullptr : it->second.get();
}

transport::Connection* Context::connectionFor(int r, int spine) const {
  if (spine >= 0) {
    auto it = spineConns_.find({r, spine});
    if (it != spineConns_.end()) return it->second.get();
  }
  return peer(r);
}

int Context::defaultSpine(int r) const {
  if (r < 0 || r >= static_cast<int>(defaultSpines_.size())) return -1;
  return defaultSpines_[r];
}

char* Context::scratch(size_t bytes) {
  if (bytes > scratchBytes_) {
    std::free(scratch_);
    scratchBytes_ = (bytes + 63) & ~size_t{63};
    scratch_ = static_cast<char*>(std::aligned_alloc(64, scratchBytes_));
    if (!scratch_) scratchBytes_ = 0;
  }
  return scratch_;
}

void Context::beginCallAlgorithm(Algorithm a) {
  callAlgorithm_ = a;
  transport::ShmGroup* g = hostGroup_.get();
  if (!g || a == Algorithm::kAuto) return;
  const uint64_t seq = peekSeq();
  g->control(g->rank()).announced.store(seq << 8 | static_cast<uint64_t>(a),
                                        std::memory_order_release);
}

Status Context::checkHostSchedules() const {
  const transport::ShmGroup* g = hostGroup_.get();
  if (!g || callAlgorithm_ == Algorithm::kAuto) return {};
  const uint64_t mine = g->control(g->rank()).announced.load(std::memory_order_relaxed);
  for (int r = 0; r < g->ranks(); ++r) {
    if (r == g->rank()) continue;
    const uint64_t theirs = g->control(r).announced.load(std::memory_order_acquire);
    if ((theirs >> 8) != (mine >> 8) || theirs == mine) continue;
    return errorf(rinaInvalidUsage,
                  "rank %d: schedules do not match in allreduce #%llu: rank %d runs it with "
                  "%s while this rank runs %s; set the same algorithm "
                  "(rinaCommSetAlgorithm, RINA_ALGO) and knobs on every rank",
                  rank_, static_cast<unsigned long long>(mine >> 8), r,
                  algorithmName(static_cast<Algorithm>(theirs & 0xFF)),
                  algorithmName(static_cast<Algorithm>(mine & 0xFF)));
  }
  return {};
}

CollHeader collHeader(const Context& ctx, uint8_t kind, uint64_t seq, size_t count,
                      rinaDataType_t type, rinaRedOp_t op, int root) {
  CollHeader h{};
  h.magic = kCollHeaderMagic;
  h.collective = kind;
  h.datatype = static_cast<uint8_t>(type);
  h.op = static_cast<uint8_t>(op);
  h.algorithm = kind == kAllReduce ? static_cast<uint8_t>(ctx.callAlgorithm()) : 0;
  h.seq = seq;
  h.count = count;
  h.root = root;
  h.sliceBytes = ctx.sliceBytes();
  h.smallMsgBytes = ctx.smallMsgBytes();
  return h;
}

EngineContext contextFor(const Context& ctx, uint8_t kind, uint64_t seq, int steps) {
  EngineContext e{ctx.rank(),      collectiveName(kind), seq,         steps,
                  ctx.timeoutMs(), ctx.abortFlag(),      ctx.spinUs()};
  e.watch = ctx.callWatch();
  e.wakeFd = ctx.wakeFd();
  return e;
}

EngineContext contextFor(const Context& ctx, const char* what, uint64_t seq) {
  EngineContext e{ctx.rank(), what, seq, 1, ctx.timeoutMs(), ctx.abortFlag(), ctx.spinUs()};
  e.watch = ctx.ownerWatch();
  e.wakeFd = ctx.wakeFd();
  return e;
}

Status runExchange(const EngineContext& ectx, std::vector<SendItem> sends,
                   std::vector<RecvItem> recvs) {
  Engine e(ectx);
  e.sends() = std::move(sends);
  e.recvs() = std::move(recvs);
  return e.run();
}

}  // namespace rina::algo
