#include "switchd/ctrl_server.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdio>
#include <vector>

namespace rina::switchd {
namespace {
constexpr int kSendTimeoutMs = 1000;
}  // namespace

uint64_t steadyNowMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

bool CtrlServer::serve(Connection& c) {
  long n = c.reader.fill(c.fd.get());
  if (n == -EAGAIN) return true;
  if (n <= 0) return false;
  std::string line;
  while (c.reader.nextLine(&line)) {
    std::vector<ina::PreemptNotice> notices;
    uint16_t registered = 0;
    std::string reply = controller_.handle(line, steadyNowMs(), &notices, &registered);
    if (registered) jobConnection_[registered] = c.fd.get();
    if (!ina::sendLine(c.fd.get(), reply, kSendTimeoutMs).ok()) return false;
    for (const ina::PreemptNotice& notice : notices) {
      fprintf(stderr, "rina-switchd: %s\n", ina::formatPreemptNotice(notice).c_str());
      auto it = jobConnection_.find(notice.job);
      if (it != jobConnection_.end() && connections_.count(it->second)) {
        // Best effort: the victim also learns from NACKs in the data plane.
        (void)ina::sendLine(it->second, ina::formatPreemptNotice(notice), kSendTimeoutMs);
      }
    }
  }
  return !c.reader.overlong();
}

void CtrlServer::run(int stopFd, double statsIntervalS) {
  uint64_t nextStats = steadyNowMs() + static_cast<uint64_t>(statsIntervalS * 1000);
  std::vector<pollfd> fds;
  for (;;) {
    fds.clear();
    fds.push_back({stopFd, POLLIN, 0});
    fds.push_back({listener_.get(), POLLIN, 0});
    for (const auto& [fd, c] : connections_) fds.push_back({fd, POLLIN, 0});
    int timeout = 200;
    if (statsIntervalS > 0) {
      uint64_t now = steadyNowMs();
      timeout = now >= nextStats ? 0 : static_cast<int>(std::min<uint64_t>(nextStats - now, 200));
    }
    int r = ::poll(fds.data(), fds.size(), timeout);
    if (r < 0 && errno != EINTR) return;
    if (statsIntervalS > 0 && steadyNowMs() >= nextStats) {
      fprintf(stderr, "rina-switchd stats %s\n", controller_.statsJson(steadyNowMs()).c_str());
      nextStats += static_cast<uint64_t>(statsIntervalS * 1000);
    }
    if (r <= 0) continue;
    if (fds[0].revents) return;
    if (fds[1].revents & POLLIN) {
      int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) {
        auto c = std::make_unique<Connection>();
        c->fd = Fd(fd);
        connections_[fd] = std::move(c);
      }
    }
    for (size_t i = 2; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      auto it = connections_.find(fds[i].fd);
      if (it == connections_.end()) continue;
      if (!serve(*it->second)) {
        for (auto j = jobConnection_.begin(); j != jobConnection_.end();) {
          j = j->second == fds[i].fd ? jobConnection_.erase(j) : std::next(j);
        }
        connections_.erase(it);
      }
    }
  }
}

}  // namespace rina::switchd
