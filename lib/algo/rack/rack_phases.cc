#include "algo/rack/rack_phases.h"

#include "algo/rack/rack_task.h"

namespace rina::algo {
namespace {

// One rack phase alone: a RackTask in an engine of its own.
Status runTask(RackCall& call, RackTask& task) {
  Engine e(contextFor(call.ctx, kAllReduce, call.seq, call.steps));
  RINA_TRY(task.start());
  e.addTask(&task);
  return e.run();
}

}  // namespace

Status rackAllReduce(RackCall& call, const Member& m, char* data, size_t count, const char* input) {
  if (count == 0) return {};
  RackTask task(call, m, data, {RackPiece{0, count, kEveryWorker}}, {}, nullptr, input);
  return runTask(call, task);
}

Status rackReduce(RackCall& call, const Member& m, int port, char* data, size_t count) {
  if (count == 0) return {};
  RackTask task(call, m, data, {RackPiece{0, count, port}}, {}, nullptr);
  return runTask(call, task);
}

Status rackBroadcast(RackCall& call, const Member& m, int port, char* data, size_t count) {
  if (count == 0 || m.ranks.size() < 2) return {};
  RackTask task(call, m, data, {}, {RackPiece{0, count, port}},
                [](size_t, size_t) { return true; });
  return runTask(call, task);
}

}  // namespace rina::algo
