#include "switchd/data_thread.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <vector>

namespace rina::switchd {
namespace {

constexpr int kBatch = 64;

uint64_t nowMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace

DataThread::DataThread(Fd socket, const PipelineConfig& config, const DataThreadOptions& options)
    : socket_(std::move(socket)),
      wakeup_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)),
      pipeline_(config),
      options_(options),
      thread_([this] { loop(); }) {}

DataThread::~DataThread() {
  stop_.store(true);
  uint64_t one = 1;
  if (::write(wakeup_.get(), &one, sizeof one) < 0) {
    // The loop also wakes up on its poll timeout.
  }
  thread_.join();
}

bool DataThread::runOnThread(std::function<void(Pipeline&)> fn, int timeoutMs) {
  std::unique_lock<std::mutex> lock(mu_);
  commands_.push_back(std::move(fn));
  uint64_t mine = ++posted_;
  uint64_t one = 1;
  if (::write(wakeup_.get(), &one, sizeof one) < 0) {
    // Counter overflow only; the poll timeout picks the command up.
  }
  return done_.wait_for(lock, std::chrono::milliseconds(timeoutMs),
                        [&] { return applied_ >= mine; });
}

void DataThread::drainCommands() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!commands_.empty()) {
    auto fn = std::move(commands_.front());
    commands_.pop_front();
    lock.unlock();
    fn(pipeline_);
    lock.lock();
    ++applied_;
  }
  done_.notify_all();
}

void DataThread::sendAll() {
  const auto& msgs = output_.messages();
  mmsghdr hdrs[kBatch];
  iovec iovs[kBatch];
  sockaddr_in addrs[kBatch];
  size_t next = 0;
  int stalls = 0;
  while (next < msgs.size()) {
    size_t n = std::min<size_t>(msgs.size() - next, kBatch);
    for (size_t i = 0; i < n; ++i) {
      const OutMessage& m = msgs[next + i];
      addrs[i] = m.to.toSockaddr();
      iovs[i] = {const_cast<uint8_t*>(output_.bytes(m)), m.length};
      hdrs[i] = {};
      hdrs[i].msg_hdr.msg_name = &addrs[i];
      hdrs[i].msg_hdr.msg_namelen = sizeof(sockaddr_in);
      hdrs[i].msg_hdr.msg_iov = &iovs[i];
      hdrs[i].msg_hdr.msg_iovlen = 1;
    }
    int sent = ::sendmmsg(socket_.get(), hdrs, static_cast<unsigned>(n), 0);
    if (sent < 0) {
      if ((errno == EAGAIN || errno == ENOBUFS) && stalls++ < 100) {
        pollfd p{socket_.get(), POLLOUT, 0};
        ::poll(&p, 1, 1);
        continue;
      }
      // An unreachable member (ECONNREFUSED from an earlier send, ...) must
      // not stall the others: skip this datagram.
      sendErrors_.add();
      ++next;
      continue;
    }
    next += static_cast<size_t>(sent);
  }
  output_.clear();
}

void DataThread::loop() {
  if (options_.cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(options_.cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  }
  std::mt19937_64 rng(options_.seed);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  double tokens = 0;
  auto lastRefill = std::chrono::steady_clock::now();
  const double burst = std::max(64.0, options_.capacityPps / 100.0);

  std::vector<std::vector<uint8_t>> buffers(kBatch,
                                            std::vector<uint8_t>(ina::kMaxDatagramBytes + 4));
  std::vector<mmsghdr> hdrs(kBatch);
  std::vector<iovec> iovs(kBatch);
  std::vector<sockaddr_in> from(kBatch);
  pollfd fds[2] = {{socket_.get(), POLLIN, 0}, {wakeup_.get(), POLLIN, 0}};

  while (!stop_.load(std::memory_order_relaxed)) {
    int r = ::poll(fds, 2, 100);
    if (r < 0 && errno != EINTR) break;
    if (fds[1].revents & POLLIN) {
      uint64_t v;
      if (::read(wakeup_.get(), &v, sizeof v) < 0) {
        // Nothing pending: spurious wakeup.
      }
    }
    drainCommands();
    // A bounded number of batches before looking at commands again.
    for (int round = 0; round < 64; ++round) {
      for (int i = 0; i < kBatch; ++i) {
        iovs[i] = {buffers[i].data(), buffers[i].size()};
        hdrs[i] = {};
        hdrs[i].msg_hdr.msg_name = &from[i];
        hdrs[i].msg_hdr.msg_namelen = sizeof(sockaddr_in);
        hdrs[i].msg_hdr.msg_iov = &iovs[i];
        hdrs[i].msg_hdr.msg_iovlen = 1;
      }
      int got = ::recvmmsg(socket_.get(), hdrs.data(), kBatch, MSG_DONTWAIT, nullptr);
      if (got <= 0) break;
      received_.add(static_cast<uint64_t>(got));
      uint64_t now = nowMs();
      if (options_.capacityPps > 0) {
        auto t = std::chrono::steady_clock::now();
        tokens =
            std::min(burst, tokens + options_.capacityPps *
                                         std::chrono::duration<double>(t - lastRefill).count());
        lastRefill = t;
      }
      for (int i = 0; i < got; ++i) {
        if (options_.dropRate > 0 && uniform(rng) < options_.dropRate) {
          injectedDrops_.add();
          continue;
        }
        if (options_.capacityPps > 0) {
          if (tokens < 1.0) {
            capacityDrops_.add();
            continue;
          }
          tokens -= 1.0;
        }
        size_t len = hdrs[i].msg_len;
        if (hdrs[i].msg_hdr.msg_flags & MSG_TRUNC) len = buffers[i].size();  // decoder rejects it
        pipeline_.process({buffers[i].data(), len}, ina::Endpoint::fromSockaddr(from[i]), now,
                          &output_);
      }
      if (!output_.messages().empty()) sendAll();
      if (got < kBatch) break;
    }
  }
  drainCommands();  // release anyone waiting
}

}  // namespace rina::switchd
