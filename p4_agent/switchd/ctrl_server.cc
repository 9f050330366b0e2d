#include "switchd/ctrl_server.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdio>
#include <vector>

namespace rina::switchd {
namespace {
constexpr int kAcceptsPerRound = 64;
constexpr uint64_t kListenerPauseMs = 100;
// Notices queued for a victim whose replies do not drain are dropped above
// this (it also learns from NACKs in the data plane).
constexpr size_t kNoticeOutputLimitFactor = 2;
}  // namespace

uint64_t steadyNowMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

CtrlServer::CtrlServer(Fd listener, Controller& controller, const CtrlServerOptions& options)
    : listener_(std::move(listener)), controller_(controller), options_(options) {
  int flags = fcntl(listener_.get(), F_GETFL);
  if (flags >= 0) fcntl(listener_.get(), F_SETFL, flags | O_NONBLOCK);
  spare_ = Fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
}

void CtrlServer::queue(Connection& c, const std::string& line, uint64_t nowMs) {
  if (pending(c) == 0) {
    c.out.clear();
    c.outSent = 0;
    c.lastOutputMs = nowMs;
  }
  c.out += line;
  c.out += '\n';
}

bool CtrlServer::flush(Connection& c, uint64_t nowMs) {
  while (pending(c) > 0) {
    ssize_t n =
        ::send(c.fd.get(), c.out.data() + c.outSent, pending(c), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK;
    }
    c.outSent += static_cast<size_t>(n);
    c.lastOutputMs = nowMs;
  }
  c.out.clear();
  c.outSent = 0;
  return true;
}

bool CtrlServer::handleLines(Connection& c, uint64_t nowMs) {
  std::string line;
  while (pending(c) < options_.maxPendingOutput && c.reader.nextLine(&line)) {
    std::vector<ina::PreemptNotice> notices;
    uint16_t registered = 0;
    std::string_view request = line;
    bool authenticated = false;
    std::string error;
    if (line == ina::kCtrlChallengeVerb) {
      queue(c,
            c.auth ? c.auth->challenge()
                   : std::string(ina::kCtrlAuthRefusal) + " this switch has no --auth-file",
            nowMs);
      continue;
    }
    if (c.auth ? !c.auth->check(line, &request, &authenticated, &error)
               : line.find(" mac=") != std::string::npos) {
      if (!c.auth) error = "this switch has no --auth-file";
      queue(c, std::string(ina::kCtrlAuthRefusal) + " " + error, nowMs);
      continue;
    }
    std::string reply = controller_.handle(request, nowMs, &notices, &registered, authenticated);
    if (registered) {
      auto [it, fresh] = jobConnection_.try_emplace(registered, c.fd.get());
      if (!fresh && it->second != c.fd.get()) {
        auto old = connections_.find(it->second);
        if (old != connections_.end()) old->second->jobs--;
        it->second = c.fd.get();
        fresh = true;
      }
      if (fresh) c.jobs++;
    }
    queue(c, reply, nowMs);
    for (const ina::PreemptNotice& notice : notices) {
      std::string text = ina::formatPreemptNotice(notice);
      fprintf(stderr, "rina-switchd: %s\n", text.c_str());
      auto it = jobConnection_.find(notice.job);
      if (it == jobConnection_.end()) continue;
      auto victim = connections_.find(it->second);
      if (victim == connections_.end()) continue;
      // Best effort: the victim also learns from NACKs in the data plane.
      if (pending(*victim->second) < kNoticeOutputLimitFactor * options_.maxPendingOutput) {
        queue(*victim->second, text, nowMs);
      }
    }
  }
  if (c.reader.buffered() > ina::kMaxCtrlLineBytes && !c.reader.hasLine()) {
    stats_.overlong++;
    return false;
  }
  return true;
}

bool CtrlServer::readFrom(Connection& c, uint64_t nowMs) {
  long n = c.reader.fill(c.fd.get());
  if (n == -EAGAIN) return true;
  if (n <= 0) return false;
  c.lastInputMs = nowMs;
  return true;
}

// Closes the connection idle longest among those that hold no job.
bool CtrlServer::evictOne() {
  int victim = -1;
  uint64_t oldest = UINT64_MAX;
  for (const auto& [fd, c] : connections_) {
    if (c->jobs > 0) continue;
    uint64_t last = std::max(c->lastInputMs, c->lastOutputMs);
    if (last < oldest) {
      oldest = last;
      victim = fd;
    }
  }
  if (victim < 0) return false;
  stats_.evicted++;
  close(victim);
  return true;
}

void CtrlServer::acceptPending(uint64_t nowMs) {
  for (int i = 0; i < kAcceptsPerRound; ++i) {
    int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0 && (errno == EMFILE || errno == ENFILE) && spare_.valid()) {
      // Out of descriptors: give up the spare to take the connection, then
      // make room by closing an idle one (or refuse the new one).
      spare_ = Fd();
      fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd >= 0 && !evictOne()) {
        ::close(fd);
        fd = -1;
        errno = EMFILE;
      }
      spare_ = Fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
      if (fd < 0 && errno == EMFILE) {
        stats_.acceptErrors++;
        listenerPausedUntilMs_ = nowMs + kListenerPauseMs;
        return;
      }
    }
    if (fd < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
      if (errno == ECONNABORTED) continue;
      // No descriptor or memory: leave the listener alone for a while
      // instead of polling it in a loop.
      stats_.acceptErrors++;
      listenerPausedUntilMs_ = nowMs + kListenerPauseMs;
      return;
    }
    if (connections_.size() >= options_.maxConnections && !evictOne()) {
      ::close(fd);
      continue;
    }
    stats_.accepted++;
    auto c = std::make_unique<Connection>();
    c->fd = Fd(fd);
    c->lastInputMs = nowMs;
    c->lastOutputMs = nowMs;
    if (!options_.secret.empty()) c->auth = std::make_unique<ina::CtrlAuthSession>(options_.secret);
    connections_[fd] = std::move(c);
  }
}

void CtrlServer::close(int fd) {
  for (auto j = jobConnection_.begin(); j != jobConnection_.end();) {
    j = j->second == fd ? jobConnection_.erase(j) : std::next(j);
  }
  connections_.erase(fd);
}

void CtrlServer::closeIdle(uint64_t nowMs) {
  std::vector<int> idle;
  for (const auto& [fd, c] : connections_) {
    bool stalled = pending(*c) > 0 && nowMs - c->lastOutputMs > options_.idleMs;
    bool silent = c->jobs == 0 && pending(*c) == 0 && nowMs - c->lastInputMs > options_.idleMs;
    if (stalled || silent) idle.push_back(fd);
  }
  for (int fd : idle) {
    stats_.idleClosed++;
    close(fd);
  }
}

void CtrlServer::run(int stopFd, double statsIntervalS) {
  uint64_t nextStats = steadyNowMs() + static_cast<uint64_t>(statsIntervalS * 1000);
  uint64_t nextIdleCheck = steadyNowMs();
  std::vector<pollfd> fds;
  for (;;) {
    uint64_t now = steadyNowMs();
    fds.clear();
    fds.push_back({stopFd, POLLIN, 0});
    bool listening = now >= listenerPausedUntilMs_;
    fds.push_back({listening ? listener_.get() : -1, POLLIN, 0});
    for (const auto& [fd, c] : connections_) {
      short events = 0;
      if (pending(*c) < options_.maxPendingOutput) events |= POLLIN;
      if (pending(*c) > 0) events |= POLLOUT;
      fds.push_back({fd, events, 0});
    }
    int timeout = 200;
    if (statsIntervalS > 0) {
      timeout = now >= nextStats ? 0 : static_cast<int>(std::min<uint64_t>(nextStats - now, 200));
    }
    if (!listening) {
      timeout = std::min(timeout, static_cast<int>(listenerPausedUntilMs_ - now));
    }
    int r = ::poll(fds.data(), fds.size(), timeout);
    if (r < 0 && errno != EINTR) return;
    now = steadyNowMs();
    if (statsIntervalS > 0 && now >= nextStats) {
      fprintf(stderr, "rina-switchd stats %s\n", controller_.statsJson(now).c_str());
      nextStats += static_cast<uint64_t>(statsIntervalS * 1000);
    }
    if (now >= nextIdleCheck) {
      closeIdle(now);
      nextIdleCheck = now + std::min<uint64_t>(options_.idleMs / 4 + 1, 1000);
    }
    if (r <= 0) continue;
    if (fds[0].revents) return;
    for (size_t i = 2; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      auto it = connections_.find(fds[i].fd);
      if (it == connections_.end()) continue;
      Connection& c = *it->second;
      bool keep = true;
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) keep = readFrom(c, now);
      // Replies to what was read, then as much of them as the socket takes;
      // lines held back by a full output buffer go once it drains.
      if (keep) keep = handleLines(c, now);
      if (keep) keep = flush(c, now);
      if (keep && pending(c) == 0) keep = handleLines(c, now) && flush(c, now);
      if (!keep) close(fds[i].fd);
    }
    // Notices queued for connections polled before the one that caused them.
    std::vector<int> broken;
    for (auto& [fd, c] : connections_) {
      if (pending(*c) > 0 && !flush(*c, now)) broken.push_back(fd);
    }
    for (int fd : broken) close(fd);
    if (listening && (fds[1].revents & POLLIN)) acceptPending(now);
  }
}

}  // namespace rina::switchd
