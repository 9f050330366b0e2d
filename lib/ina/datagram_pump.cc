#include "ina/datagram_pump.h"

#include <poll.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <span>

#include "core/log.h"
#include "rina/ina_roce.h"
#include "wire/net.h"

namespace rina::ina {
namespace {

constexpr int kRxBatch = 64;
// Answers for calls not attached yet (switch broadcasts) kept meanwhile.
constexpr size_t kMaxEarlyDatagrams = 4096;
// The pacer's burst unless the options give one (paceBurstBytes): this many
// full datagrams, or a millisecond at the pace when that is more.
constexpr double kBurstDatagrams = 4;

}  // namespace

int64_t schedulerRtoFloorUs() {
  static const int64_t floorUs = [] {
    const long cpus = std::clamp<long>(sysconf(_SC_NPROCESSORS_ONLN), 1, 8);
    int log2 = 0;
    while ((2L << log2) <= cpus) ++log2;
    const int64_t sliceUs = 750 * (1 + log2);
    return 2 * sliceUs + 1000;
  }();
  return floorUs;
}

DatagramPump::DatagramPump(const InaClientOptions& options)
    : options_(options),
      rto_(options.initialRtoUs, std::max(options.minRtoUs, schedulerRtoFloorUs()),
           std::max(options.maxRtoUs, schedulerRtoFloorUs())),
      rxScratch_(kMaxDatagramBytes) {}

Status DatagramPump::create(const InaClientOptions& options, std::unique_ptr<InaSender> sender,
                            std::unique_ptr<DatagramPump>* out) {
  if (options.fanIn == 0 || options.fanIn > kMaxFanIn || options.worker >= options.fanIn) {
    return errorf(rinaInvalidArgument, "ina: bad client options: job %u worker %u fan-in %u",
                  options.job, options.worker, options.fanIn);
  }
  std::unique_ptr<DatagramPump> p(new DatagramPump(options));
  Status s = openUdpSocket(options.local, options.socketBufferBytes, &p->socket_);
  if (s.ok()) s = boundEndpoint(p->socket_.get(), &p->local_);
  if (!s.ok()) return s.prepend(p->context());
  const bool gro = UdpBatchReceiver::enableGro(p->socket_.get());
  UdpBatchReceiver::enableDropCount(p->socket_.get());
  p->rx_ = std::make_unique<UdpBatchReceiver>(kRxBatch, roce::kMaxDatagramBytes + 4, gro);
  p->sender_ = sender ? std::move(sender) : makeUdpSender(p->socket_.get(), options.switchAddr);
  p->sender_->setMember(options.job, options.token, options.worker, options.fanIn);
  if (p->sender_->receiveFd() >= 0) {
    // Answers may also come through the sender: one fd that wakes for both.
    p->wait_ = Fd(epoll_create1(EPOLL_CLOEXEC));
    for (int fd : {p->socket_.get(), p->sender_->receiveFd()}) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = fd;
      if (!p->wait_.valid() || epoll_ctl(p->wait_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) {
        return systemErrorf(errno, "epoll").prepend(p->context());
      }
    }
  }
  *out = std::move(p);
  return Status();
}

std::string DatagramPump::context() const {
  return "ina: worker " + std::to_string(options_.worker) + " job " + std::to_string(options_.job) +
         ": ";
}

Status DatagramPump::setJob(uint16_t job, uint64_t token) {
  if (job == 0) return errorf(rinaInvalidArgument, "job id 0 is not a job").prepend(context());
  if (!calls_.empty()) {
    return errorf(rinaInvalidUsage, "a new job id (%u) while a call is in progress", job)
        .prepend(context());
  }
  options_.job = job;
  options_.token = token;
  sender_->setMember(job, token, options_.worker, options_.fanIn);
  return Status();
}

Status DatagramPump::setGrant(const Grant& grant) {
  if (options_.job == 0) {
    return errorf(rinaInvalidUsage, "a grant before the job id (setJob)").prepend(context());
  }
  if (grant.length == 0 || grant.payloadElems == 0 || grant.payloadElems > kMaxPayloadElems ||
      grant.ports == 0) {
    return errorf(rinaInvalidUsage, "no usable grant (length %u)", grant.length).prepend(context());
  }
  Status carried = sender_->setGrant(grant);
  if (!carried.ok()) {
    if (!options_.udpFallback) return carried;
    RINA_INFO("ina: worker %u job %u: sending over UDP instead: %s", options_.worker, options_.job,
              carried.message().c_str());
    sender_ = makeUdpSender(socket_.get(), options_.switchAddr);
  }
  grant_ = grant;
  window_ = options_.window ? std::min(options_.window, grant.length) : grant.length;
  lostSlots_.assign(window_, false);
  resultSinceGrant_ = false;
  slots_.assign(window_, InFlight{});
  std::vector<uint32_t> slotsPerPort(grant.ports, 0);
  for (uint32_t w = 0; w < window_; ++w) slotsPerPort[portOf(w)]++;
  congestion_.reset(slotsPerPort, options_.congestionWindow);
  const double datagram = static_cast<double>(kHeaderBytes + kWordBytes * grant.payloadElems);
  const double burst = options_.paceBurstBytes > 0
                           ? options_.paceBurstBytes
                           : std::max(kBurstDatagrams * datagram, options_.paceBytesPerSec / 1000);
  pacer_.configure(options_.paceBytesPerSec, burst);
  early_.clear();
  // The sequence goes on across grants, so a datagram of an earlier grant
  // still in a socket or in flight can never pass for one of this grant
  // (same slot, same seq). Restart only far from the 32-bit wrap.
  if (nextSeq_ >= (1u << 31)) nextSeq_ = 1;
  return Status();
}

Status DatagramPump::needGrant(const char* what) const {
  if (window_ != 0) return Status();
  return errorf(rinaInvalidUsage, "%s before a slot grant", what).prepend(context());
}

bool DatagramPump::lostSlots() const {
  return std::find(lostSlots_.begin(), lostSlots_.end(), true) != lostSlots_.end();
}

Status DatagramPump::claimSlots(const char* what, uint32_t first, uint32_t* slots) const {
  if (*slots == 0) *slots = window_ - std::min(window_, first);
  if (*slots == 0 || first + *slots > window_) {
    return errorf(rinaInvalidArgument, "%s slots %u..%u are outside the window of %u", what, first,
                  first + *slots, window_)
        .prepend(context());
  }
  for (const PumpCall* c : calls_) {
    if (c->holdsSlots(first, *slots)) {
      return errorf(rinaInvalidUsage, "%s slots %u..%u overlap the %s in progress", what, first,
                    first + *slots, c->name())
          .prepend(context());
    }
  }
  return Status();
}

Status DatagramPump::takeSeqs(uint64_t count, uint32_t* base) {
  if (uint64_t{nextSeq_} + count >= (uint64_t{1} << 32)) {
    // Seq 0 means "unused" to the switch, and t % W must not jump at the wrap.
    return errorf(rinaInvalidUsage, "slice sequence exhausted; REQUEST a fresh grant")
        .prepend(context());
  }
  *base = nextSeq_;
  nextSeq_ += static_cast<uint32_t>(count);
  return Status();
}

Header DatagramPump::header(Type type, uint32_t w, bool shadow, uint32_t seq) const {
  Header h;
  h.type = type;
  h.flags = 0;
  h.job = options_.job;
  h.slot = static_cast<uint16_t>(grant_.base + w);
  h.shadow = shadow;
  h.worker = options_.worker;
  h.fanIn = options_.fanIn;
  h.seq = seq;
  h.elems = static_cast<uint16_t>(grant_.payloadElems);
  h.token = options_.token;
  h.exponent = 0;
  return h;
}

void DatagramPump::freeSlots(uint32_t first, uint32_t count) {
  for (uint32_t w = first; w < first + count; ++w) {
    // A datagram an earlier call left in flight (it ended on an error)
    // leaves the port's window too.
    if (slots_[w].busy) congestion_.done(portOf(w), false);
    slots_[w].busy = false;
  }
}

Status DatagramPump::send(const std::vector<InFlight*>& batch, const char* what) {
  out_.resize(batch.size());
  const Clock::time_point now = Clock::now();
  for (size_t k = 0; k < batch.size(); ++k) {
    InFlight* e = batch[k];
    out_[k] = {e->bytes, static_cast<uint16_t>(grant_.port + portOf(e->slot))};
    e->sentAt = now;
  }
  Status s = sender_->send(out_);
  if (!s.ok()) return s.prepend(context() + what);
  return s;
}

void DatagramPump::markResent(InFlight& e) {
  e.bytes[1] |= kFlagResend;
  e.retransmitted = true;
}

void DatagramPump::sampleRtt(const InFlight& e, Clock::time_point now) {
  if (!e.retransmitted) rto_.sample(microsBetween(e.sentAt, now));
}

void DatagramPump::endCall(InaCallStats* stats) {
  stats->socketDrops = socketDrops_ - reportedDrops_;
  stats->pacedHolds = pacer_.holds() - reportedHolds_;
  reportedDrops_ = socketDrops_;
  reportedHolds_ = pacer_.holds();
  stats->rtoUs = rto_.rtoUs();
  stats->srttUs = rto_.srttUs();
}

bool DatagramPump::lateCopy(const Header& h, bool* undone) {
  const uint32_t w = h.slot - grant_.base;
  if (h.slot < grant_.base || w >= window_ || h.type != Type::kResult) return false;
  InFlight& e = slots_[w];
  if (e.busy || e.seq != h.seq || !e.retransmitted || e.lateCounted) return false;
  e.lateCounted = true;
  *undone = congestion_.spurious(portOf(w), e.seq);
  return true;
}

void DatagramPump::attach(PumpCall& c) {
  calls_.push_back(&c);
  std::deque<std::vector<uint8_t>> early;
  early.swap(early_);
  answerTime_ = Clock::now();
  for (const auto& d : early) route(d.data(), d.size());
}

void DatagramPump::detach(PumpCall& c) { std::erase(calls_, &c); }

void DatagramPump::route(const uint8_t* data, size_t len) {
  Header h;
  if (decode({data, len}, &h) != DecodeError::kOk || h.job != options_.job ||
      h.token != options_.token || calls_.empty()) {
    return;
  }
  uint32_t end = calls_.front()->seqEnd();
  for (PumpCall* c : calls_) {
    if (h.seq - c->seqBegin() < c->seqEnd() - c->seqBegin()) {
      ++routed_;
      c->onAnswer(h, data + kHeaderBytes);
      return;
    }
    if (static_cast<int32_t>(c->seqEnd() - end) > 0) end = c->seqEnd();
  }
  if (static_cast<int32_t>(h.seq - end) >= 0) {
    if (early_.size() < kMaxEarlyDatagrams) early_.emplace_back(data, data + len);
    return;
  }
  for (PumpCall* c : calls_) c->onStray(h);
}

void DatagramPump::receive() {
  for (;;) {
    const int got = rx_->receive(socket_.get());
    if (got <= 0) break;
    socketDrops_ = std::max<uint64_t>(socketDrops_, rx_->socketDrops());
    answerTime_ = Clock::now();
    for (UdpBatchReceiver::Datagram& d : rx_->datagrams()) {
      if (d.truncated) continue;
      // A RoCEv2 answer (its first byte is the BTH opcode, never a native
      // magic/version byte) is translated in place (the native form is
      // shorter); one that does not parse is dropped.
      if (d.len > 0 && d.data[0] == roce::kOpUcWriteOnlyImm) {
        roce::RoceError err;
        const size_t len = roce::toNative({d.data, d.len}, rxScratch_, &err);
        std::memcpy(d.data, rxScratch_.data(), len);
        d.len = static_cast<uint32_t>(len);
      }
      if (d.len > 0) route(d.data, d.len);
    }
    if (got < kRxBatch) break;
  }
  // Answers the sender received (native datagrams, from a UC queue pair's
  // ring), copied out first: routing them may send.
  nicBytes_.clear();
  nicLengths_.clear();
  Status s = sender_->receive([this](std::span<const uint8_t> d) {
    nicBytes_.insert(nicBytes_.end(), d.begin(), d.end());
    nicLengths_.push_back(static_cast<uint32_t>(d.size()));
  });
  if (!s.ok()) RINA_WARN("%s%s", context().c_str(), s.message().c_str());
  size_t at = 0;
  if (!nicLengths_.empty()) answerTime_ = Clock::now();
  for (uint32_t len : nicLengths_) {
    route(nicBytes_.data() + at, len);
    at += len;
  }
}

void DatagramPump::waitReadable(int ms) const {
  pollfd p{fd(), POLLIN, 0};
  ::poll(&p, 1, ms);
}

}  // namespace rina::ina
