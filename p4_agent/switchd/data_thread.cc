#include "switchd/data_thread.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <vector>

#include "rina/ina_roce.h"
#include "switchd/roce_frame.h"

namespace rina::switchd {
namespace {

constexpr int kBatch = 64;
// A full send buffer is waited on for up to 100 ms per batch, then the
// answer is dropped (the workers' retransmissions recover it).
constexpr int kMaxSendStalls = 100;

uint64_t nowMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace

DataThread::DataThread(Fd socket, const PipelineConfig& config, const DataThreadOptions& options,
                       Fd roceSocket, RawRoce raw)
    : socket_(std::move(socket)),
      roceSocket_(std::move(roceSocket)),
      raw_(std::move(raw)),
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

// Answers leave grouped by destination (in their order within each), so
// that the results and multicast copies for one member form runs that the
// sender segments into one send (udp_batch.h).
void DataThread::sendAll(const std::vector<OutMessage>& msgs, const Output& arena, int fd) {
  if (msgs.empty()) return;
  order_.resize(msgs.size());
  for (uint32_t i = 0; i < msgs.size(); ++i) order_[i] = i;
  // By destination, then by position: the order of a stable sort, from
  // std::sort, which needs no buffer (std::stable_sort allocates one).
  auto key = [&](uint32_t i) { return uint64_t{msgs[i].to.addr} << 16 | msgs[i].to.port; };
  std::sort(order_.begin(), order_.end(), [&](uint32_t a, uint32_t b) {
    const uint64_t ka = key(a), kb = key(b);
    return ka != kb ? ka < kb : a < b;
  });
  out_.resize(msgs.size());
  for (size_t k = 0; k < msgs.size(); ++k) {
    const OutMessage& m = msgs[order_[k]];
    out_[k] = {m.to.toSockaddr(), arena.bytes(m), m.length};
  }
  ina::UdpBatchSender::Result r = sender_.send(fd, out_, kMaxSendStalls);
  sendErrors_.add(r.dropped);
  sentMessages_.add(r.messages);
}

// Answers of jobs that speak the RoCEv2 layout are translated and leave
// through the RoCE socket; the rest go out unchanged.
void DataThread::flush() {
  if (output_.messages().empty()) return;
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  if (roceJobs_.empty() && options_.sendDropRate <= 0) {
    sendAll(output_.messages(), output_, socket_.get());
    output_.clear();
    return;
  }
  plain_.clear();
  roceOut_.clear();
  for (const OutMessage& m : output_.messages()) {
    if (options_.sendDropRate > 0 && uniform(rng_) < options_.sendDropRate) {
      injectedSendDrops_.add();
      continue;
    }
    const uint8_t* b = output_.bytes(m);
    const uint16_t job =
        m.length >= ina::kHeaderBytes ? static_cast<uint16_t>(b[2] << 8 | b[3]) : 0;
    if (!roceJobs_.count(job)) {
      plain_.push_back(m);
      continue;
    }
    if (raw_.send.valid() && sendToRing(job, m.to, b, m.length)) continue;
    uint32_t offset = 0;
    std::span<uint8_t> buf = roceOut_.reserve(m.length + ina::roce::kOverheadBytes, &offset);
    size_t n = ina::roce::fromNative({b, m.length}, buf);
    if (n == 0) {
      sendErrors_.add();
      continue;
    }
    roceOut_.add(m.to, offset, static_cast<uint32_t>(n));
  }
  sendAll(plain_, output_, socket_.get());
  sendAll(roceOut_.messages(), roceOut_, roceSocket_.get());
  output_.clear();
  roceOut_.clear();
}

namespace {

uint16_t get16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
uint32_t get32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}

}  // namespace

void DataThread::processRoce(const uint8_t* data, size_t len, const ina::Endpoint& from,
                             uint32_t to, uint64_t now) {
  ina::roce::RoceError err;
  len = ina::roce::toNative({data, len}, scratch_, &err);
  if (len == 0) {
    roceMalformed_.add();
    return;
  }
  ina::Header h;
  if (raw_.send.valid() && ina::decode({scratch_.data(), len}, &h) == ina::DecodeError::kOk &&
      h.type == ina::Type::kCtrl) {
    attach(h, scratch_.data(), from, to);
    return;
  }
  roceJobs_.insert(static_cast<uint16_t>(scratch_[2] << 8 | scratch_[3]));
  pipeline_.process({scratch_.data(), len}, from, now, &output_, true);
}

void DataThread::attach(const ina::Header& h, const uint8_t* datagram, const ina::Endpoint& from,
                        uint32_t to) {
  // Only a member may point its own answers somewhere: the job's token, a
  // worker index of the job, and the address that worker registered.
  const JobEntry* job = pipeline_.job(h.job);
  ina::roce::RingAttach ring;
  int32_t words[ina::roce::kAttachWords];
  bool ok = job && job->token == h.token && h.worker < job->members.size() &&
            job->members[h.worker].addr == from.addr && h.elems == ina::roce::kAttachWords;
  if (ok) {
    ina::decodePayload(datagram + ina::kHeaderBytes, ina::roce::kAttachWords, words);
    ok = ina::roce::decodeAttach(words, &ring);
  }
  if (!ok) {
    roceAttachRefused_.add();
    return;
  }
  RingRoute& r = routes_[uint32_t{h.job} << 8 | h.worker];
  r = RingRoute{h.token, from.addr, to, ring, ring.psn};
  roceAttached_.add();
  roceJobs_.insert(h.job);
  // The acknowledgement, header only, in ring slot 0.
  ina::Header ack = h;
  ack.elems = 0;
  uint8_t bytes[ina::kHeaderBytes];
  if (ina::encodeHeader(ack, bytes)) sendToRing(h.job, job->members[h.worker], bytes, sizeof bytes);
}

bool DataThread::sendToRing(uint16_t jobId, const ina::Endpoint& to, const uint8_t* bytes,
                            uint32_t length) {
  const JobEntry* job = pipeline_.job(jobId);
  if (!job || length < ina::kHeaderBytes) return false;
  size_t w = 0;
  while (w < job->members.size() && !(job->members[w] == to)) ++w;
  auto it = routes_.find(uint32_t{jobId} << 8 | static_cast<uint32_t>(w));
  if (w == job->members.size() || it == routes_.end()) return false;
  RingRoute& r = it->second;
  if (r.token != job->token) {  // attached to an earlier job of this id
    routes_.erase(it);
    return false;
  }
  if (length > r.ring.slotBytes) return false;
  const bool ctrl = (bytes[1] >> 4) == static_cast<uint8_t>(ina::Type::kCtrl);
  const uint16_t slot = get16(bytes + 4);
  const uint32_t pos =
      ctrl ? 0 : ina::roce::ringSlotFor(slot & 0x7FFF, (slot & 0x8000) != 0, r.ring.slots);
  roce::UcWrite f;
  f.srcAddr = r.switchAddr;
  f.dstAddr = r.memberAddr;
  f.srcPort = static_cast<uint16_t>(0xC000 | (r.ring.qpn & 0x3FFF));
  f.ipId = ipId_;
  ipId_ = static_cast<uint16_t>(ipId_ + 1 == 0 ? 1 : ipId_ + 1);
  f.destQp = r.ring.qpn;
  f.psn = r.psn;
  r.psn = (r.psn + 1) & 0xFFFFFF;
  f.va = r.ring.addr + uint64_t{pos} * r.ring.slotBytes;
  f.rkey = r.ring.rkey;
  f.imm = pos;
  frame_.resize(roce::kUcWriteHeaderBytes + length + roce::kIcrcBytes);
  const size_t n = roce::buildUcWrite(f, {bytes, length}, frame_);
  sockaddr_in dst = ina::Endpoint{r.memberAddr, ina::roce::kUdpPort}.toSockaddr();
  if (n == 0 || ::sendto(raw_.send.get(), frame_.data(), n, 0, reinterpret_cast<sockaddr*>(&dst),
                         sizeof dst) != static_cast<ssize_t>(n)) {
    sendErrors_.add();
    return true;  // lost, as a dropped datagram: the worker resends
  }
  roceNicSent_.add();
  sentMessages_.add();
  return true;
}

void DataThread::receiveRaw() {
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  for (int round = 0; round < 64; ++round) {
    int got = rawRx_->receive(raw_.receive.get());
    if (got <= 0) break;
    receivedMessages_.add(static_cast<uint64_t>(got));
    const uint64_t now = nowMs();
    for (const ina::UdpBatchReceiver::Datagram& d : rawRx_->datagrams()) {
      const uint8_t* p = d.data;
      const size_t len = d.len;
      // IPv4 without options, UDP to this thread's port, lengths that agree.
      if (d.truncated || len < roce::kIpv4HeaderBytes + roce::kUdpHeaderBytes || p[0] != 0x45 ||
          p[9] != 17 || get16(p + 22) != raw_.port) {
        continue;
      }
      received_.add();
      if (get16(p + 2) != len || get16(p + 24) != len - roce::kIpv4HeaderBytes) {
        roceMalformed_.add();
        continue;
      }
      if (!roce::icrcValid({p, len})) {
        roceBadIcrc_.add();
        continue;
      }
      roceReceived_.add();
      if (options_.dropRate > 0 && uniform(rng_) < options_.dropRate) {
        injectedDrops_.add();
        continue;
      }
      const ina::Endpoint from{get32(p + 12), get16(p + 20)};
      const size_t head = roce::kIpv4HeaderBytes + roce::kUdpHeaderBytes;
      processRoce(p + head, len - head, from, get32(p + 16), now);
    }
    flush();
    if (static_cast<size_t>(got) < rawRx_->batch()) break;
  }
}

void DataThread::receive(int fd, bool roce) {
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  const double burst = std::max(64.0, options_.capacityPps / 100.0);
  // A bounded number of batches before looking at commands again.
  for (int round = 0; round < 64; ++round) {
    int got = rx_->receive(fd);
    if (got <= 0) break;
    if (uint32_t& seen = dropsSeen_[roce ? 1 : 0]; rx_->socketDrops() > seen) {
      socketDrops_.add(rx_->socketDrops() - seen);
      seen = rx_->socketDrops();
    }
    const std::span<ina::UdpBatchReceiver::Datagram> datagrams = rx_->datagrams();
    receivedMessages_.add(static_cast<uint64_t>(got));
    received_.add(datagrams.size());
    if (roce) roceReceived_.add(datagrams.size());
    uint64_t now = nowMs();
    if (options_.capacityPps > 0) {
      auto t = std::chrono::steady_clock::now();
      tokens_ =
          std::min(burst, tokens_ + options_.capacityPps *
                                        std::chrono::duration<double>(t - lastRefill_).count());
      lastRefill_ = t;
    }
    for (const ina::UdpBatchReceiver::Datagram& d : datagrams) {
      if (options_.dropRate > 0 && uniform(rng_) < options_.dropRate) {
        injectedDrops_.add();
        continue;
      }
      if (options_.capacityPps > 0) {
        if (tokens_ < 1.0) {
          capacityDrops_.add();
          continue;
        }
        tokens_ -= 1.0;
      }
      const size_t len =
          d.len;  // a truncated one is rejected by the decoder (too long for its elems)
      const ina::Endpoint from = ina::Endpoint::fromSockaddr(rx_->from(d));
      if (roce) {
        processRoce(d.data, len, from, 0, now);
      } else {
        pipeline_.process({d.data, len}, from, now, &output_, false);
      }
    }
    flush();
    if (static_cast<size_t>(got) < rx_->batch()) break;
  }
}

void DataThread::loop() {
  if (options_.cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(options_.cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  }
  rng_.seed(options_.seed);
  lastRefill_ = std::chrono::steady_clock::now();
  // Segmented receives on both sockets when the kernel has them.
  bool gro = ina::UdpBatchReceiver::enableGro(socket_.get());
  if (roceSocket_.valid()) gro = ina::UdpBatchReceiver::enableGro(roceSocket_.get()) && gro;
  ina::UdpBatchReceiver::enableDropCount(socket_.get());
  if (roceSocket_.valid()) ina::UdpBatchReceiver::enableDropCount(roceSocket_.get());
  rx_ = std::make_unique<ina::UdpBatchReceiver>(kBatch, ina::roce::kMaxDatagramBytes + 4, gro);
  if (raw_.receive.valid()) {
    rawRx_ = std::make_unique<ina::UdpBatchReceiver>(
        kBatch, roce::kIpv4HeaderBytes + roce::kUdpHeaderBytes + ina::roce::kMaxDatagramBytes + 4,
        false);
  }
  scratch_.resize(ina::kMaxDatagramBytes);
  // poll ignores a negative fd: no RoCE socket, no entry. With --roce-raw
  // the RoCE socket only holds the port (its filter drops everything): the
  // raw socket reads the whole packets instead.
  pollfd fds[3] = {{socket_.get(), POLLIN, 0},
                   {wakeup_.get(), POLLIN, 0},
                   {raw_.receive.valid() ? raw_.receive.get() : roceSocket_.get(), POLLIN, 0}};

  while (!stop_.load(std::memory_order_relaxed)) {
    int r = ::poll(fds, 3, 100);
    if (r < 0 && errno != EINTR) break;
    // Only what poll found ready: a system call on an idle socket per wakeup
    // is a cost per batch of datagrams (the RoCEv2 port is open by default).
    // Commands come with a write to the eventfd; the poll timeout drains
    // them too, so none waits longer than that.
    if ((fds[1].revents & POLLIN) || r == 0) {
      uint64_t v;
      if (::read(wakeup_.get(), &v, sizeof v) < 0) {
        // Nothing pending: the timeout.
      }
      drainCommands();
    }
    if (fds[0].revents & POLLIN) receive(socket_.get(), false);
    if (fds[2].revents & POLLIN) {
      if (raw_.receive.valid()) {
        receiveRaw();
      } else {
        receive(roceSocket_.get(), true);
      }
    }
  }
  drainCommands();  // release anyone waiting
}

}  // namespace rina::switchd
