#include "transport/resync.h"

#include <algorithm>
#include <string>

#include "transport/wait_set.h"

namespace rina::transport {

Status resyncAll(const std::vector<Connection*>& conns, uint64_t token, int rank, Deadline deadline,
                 const std::atomic<bool>* abort, bool begun) {
  if (!begun) {
    for (Connection* c : conns) c->beginResync(token);
  }
  std::vector<Connection*> pending = conns;
  while (!pending.empty()) {
    for (size_t i = 0; i < pending.size();) {
      bool done = false;
      Status s = pending[i]->pollResync(&done);
      if (!s.ok())
        return s.prepend("rank " + std::to_string(rank) + ": taking over the connection: ");
      if (done) {
        pending[i] = pending.back();
        pending.pop_back();
      } else {
        ++i;
      }
    }
    if (pending.empty()) break;
    if (abort && abort->load()) {
      return errorf(rinaAborted, "rank %d: taking over connections: aborted", rank);
    }
    if (Clock::now() >= deadline) {
      std::string who;
      for (Connection* c : pending) {
        who.append(who.empty() ? "" : ", ").append(std::to_string(c->peer()));
      }
      return errorf(rinaTimeout,
                    "rank %d: taking over connections: rank(s) %s did not resync within "
                    "RINA_TIMEOUT_MS",
                    rank, who.c_str());
    }
    WaitSet ws;
    for (Connection* c : pending) c->armResync(ws);
    ws.wait(static_cast<int>(std::clamp<int64_t>(msUntil(deadline), 1, 100)));
  }
  return {};
}

}  // namespace rina::transport
