#include "comm/peer_channels.h"

#include <poll.h>
#include <sched.h>

#include <algorithm>
#include <cstring>

#include "core/log.h"
#include "transport/channel.h"

namespace rina::comm {
namespace {

constexpr int64_t kShortPollUs = 20;

// CPUs this process may run on.
int usableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return CPU_COUNT(&set);
}

}  // namespace

PeerChannels::PeerChannels(const transport::MeshOptions& mesh, int listenFd,
                           transport::Arrivals* arrivals, int64_t timeoutMs, int64_t spinUs,
                           const algo::MessageLimits& limits)
    : mesh_(mesh),
      listenFd_(listenFd),
      arrivals_(arrivals),
      timeoutMs_(timeoutMs),
      out_(mesh.table.size()),
      in_(mesh.table.size()),
      sendSeq_(mesh.table.size()),
      recvSeq_(mesh.table.size()),
      limits_(limits) {
  int onHost = 0;
  for (size_t r = 0; r < mesh.table.size(); ++r) {
    onHost += transport::sameHost(mesh, static_cast<int>(r)) ? 1 : 0;
  }
  pollUs_ = onHost <= usableCpus() ? std::max(spinUs, kShortPollUs) : kShortPollUs;
}

Status PeerChannels::sendChannel(int peer, transport::Connection** out) {
  std::unique_ptr<transport::Connection>& slot = out_[peer];
  if (!slot) {
    transport::MeshOptions opt = mesh_;
    opt.deadline = deadlineAfterMs(timeoutMs_);
    std::unique_ptr<transport::Connection> conn;
    RINA_TRY(transport::openChannel(opt, peer, &conn));
    slot = std::move(conn);
  }
  *out = slot.get();
  return {};
}

transport::Connection* PeerChannels::recvChannel(int peer) { return in_[peer].get(); }

std::vector<transport::Connection*> PeerChannels::recvChannels() { return recvOrder_; }

Status PeerChannels::takeArrivals(bool* took) {
  *took = false;
  // At most a table's worth per call: every peer opens one channel here.
  for (size_t round = 0; round <= mesh_.table.size(); ++round) {
    transport::Arrival a;
    if (!arrivals_->channels.empty()) {
      a = std::move(arrivals_->channels.front());
      arrivals_->channels.pop_front();
    } else {
      bool got = false;
      RINA_TRY(transport::acceptArrivalNow(mesh_, listenFd_, deadlineAfterMs(5000), &a, &got));
      if (!got) return {};
      if (a.hello.kind == transport::kNoticeHello) {
        arrivals_->notices.push_back(std::move(a));  // the communicator reads it
        continue;
      }
      if (a.hello.kind != transport::kChannelHello) {
        // Another rank's connection set-up (a plan's new neighbour): the
        // next buildMesh takes it.
        arrivals_->mesh.push_back(std::move(a));
        continue;
      }
    }
    const int from = a.hello.from;
    if (from < 0 || from >= static_cast<int>(mesh_.table.size()) || from == mesh_.rank) {
      RINA_WARN("rank %d: refused a point-to-point channel claiming to come from rank %d",
                mesh_.rank, from);
      continue;
    }
    if (in_[from]) {
      RINA_WARN("rank %d: refused a second point-to-point channel from rank %d", mesh_.rank, from);
      continue;
    }
    std::unique_ptr<transport::Connection> conn;
    RINA_TRY(transport::acceptChannel(mesh_, std::move(a), &conn));
    recvOrder_.push_back(conn.get());
    in_[from] = std::move(conn);
    *took = true;
  }
  return {};
}

void PeerChannels::armArrivals(transport::WaitSet& ws) {
  if (listenFd_ >= 0) ws.addFd(listenFd_, POLLIN);
}

uint64_t PeerChannels::bytes(transport::Direction d) const {
  uint64_t sum = 0;
  for (const auto* side : {&out_, &in_}) {
    for (const auto& conn : *side) {
      if (conn) sum += conn->counters().bytes[static_cast<int>(d)];
    }
  }
  return sum;
}

}  // namespace rina::comm
