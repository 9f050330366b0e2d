#include "ina/uc_sender.h"

#include <cstddef>
#include <string>

#include "core/log.h"
#include "rina/ina_roce.h"

namespace rina::ina {

using transport::verbs::UcQueuePair;
using transport::verbs::UcWriteRequest;

uint32_t ucImmediate(const Header& h) {
  return uint32_t{static_cast<uint8_t>(static_cast<uint8_t>(h.type) << 4 | h.flags)} << 24 |
         uint32_t{h.worker} << 16 | uint32_t{h.fanIn} << 8 | static_cast<uint8_t>(h.exponent);
}

uint64_t ucRemoteAddress(const Header& h) {
  const uint64_t slot = h.slot | (h.shadow ? kShadowBit : 0);
  return slot << 32 | h.seq;
}

bool ucWriteFor(std::span<const uint8_t> native, UcWriteRequest* out) {
  Header h;
  if (decode(native, &h) != DecodeError::kOk) return false;
  out->remoteAddr = ucRemoteAddress(h);
  out->rkey = static_cast<uint32_t>(h.token >> 32);
  out->imm = ucImmediate(h);
  // The token's low word, then the payload: native bytes 20 .. end.
  static_assert(offsetof(WireHeader, tokenLow) + roce::kTokenLowBytes == kHeaderBytes);
  out->payload =
      native.subspan(offsetof(WireHeader, tokenLow), roce::kTokenLowBytes + kWordBytes * h.elems);
  return true;
}

namespace {

// Bounded: a queue that stays full means the NIC is stuck; the client's
// timer resends what was not posted.
constexpr int kFullQueueReaps = 64;

class UcSender : public InaSender {
 public:
  UcSender(std::unique_ptr<UcQueuePair> qp, uint32_t switchAddr)
      : qp_(std::move(qp)), switchAddr_(switchAddr) {}
  const char* name() const override { return "rdma-uc"; }
  Status setGrant(const Grant& grant) override;
  Status send(std::span<const OutDatagram> batch) override;
  void setMember(uint16_t job, uint64_t token, uint8_t worker, uint8_t fanIn) override {
    member_ = Header{};
    member_.type = Type::kCtrl;
    member_.job = job;
    member_.token = token;
    member_.worker = worker;
    member_.fanIn = fanIn;
    member_.elems = roce::kAttachWords;
  }
  Status receive(const std::function<void(std::span<const uint8_t>)>& fn) override {
    return qp_->receive(fn);
  }
  int receiveFd() const override { return qp_->receiveFd(); }

 private:
  // Asks the switch to write this worker's answers into the QP's ring.
  Status attach(const Grant& grant);
  Status post(const UcWriteRequest& wr);

  std::unique_ptr<UcQueuePair> qp_;
  uint32_t switchAddr_;
  Header member_;  // job 0: setMember never came
};

Status UcSender::post(const UcWriteRequest& wr) {
  bool posted = false;
  for (int i = 0; i < kFullQueueReaps && !posted; ++i) {
    RINA_TRY(qp_->post(wr, &posted));
    if (!posted) RINA_TRY(qp_->reap());
  }
  return {};
}

Status UcSender::attach(const Grant& grant) {
  transport::verbs::UcReceiveRing ring;
  if (member_.job == 0 || member_.job != grant.job || !qp_->receiveRing(&ring)) return {};
  if (2 * uint64_t{grant.length} > ring.slots - 1 ||
      kHeaderBytes + kWordBytes * grant.payloadElems > ring.slotBytes) {
    RINA_INFO(
        "ina: worker %u job %u: answers stay on UDP: a grant of %u slots of %u elements "
        "does not fit the receive ring (%u slots of %u bytes)",
        member_.worker, member_.job, grant.length, grant.payloadElems, ring.slots, ring.slotBytes);
    return {};
  }
  roce::RingAttach a;
  a.qpn = ring.qpn;
  a.psn = ring.psn;
  a.addr = ring.addr;
  a.rkey = ring.rkey;
  a.slots = ring.slots;
  a.slotBytes = ring.slotBytes;
  int32_t words[roce::kAttachWords];
  roce::encodeAttach(a, words);
  uint8_t bytes[kHeaderBytes + kWordBytes * roce::kAttachWords];
  if (encode(member_, std::span<const int32_t>(words), bytes) == 0) {
    return errorf(rinaInternalError, "INA over RDMA UC: cannot encode the ring attachment");
  }
  UcWriteRequest wr;
  if (!ucWriteFor(bytes, &wr)) {
    return errorf(rinaInternalError, "INA over RDMA UC: undecodable ring attachment");
  }
  RINA_INFO("ina: worker %u job %u: answers asked into QP %u's ring (%u slots of %u bytes)",
            member_.worker, member_.job, ring.qpn, ring.slots, ring.slotBytes);
  // Best effort like every datagram: if it is lost, answers keep coming by UDP.
  return post(wr);
}

Status UcSender::setGrant(const Grant& grant) {
  const std::string where = "INA over RDMA UC (" + qp_->device() + ")";
  if (grant.ports != 1) {
    return errorf(rinaInvalidUsage,
                  "%s: the switch serves job %u on %u data ports, but RoCEv2 reaches one (UDP "
                  "4791): give the switch one data port (rina-switchd --threads 1)",
                  where.c_str(), grant.job, grant.ports);
  }
  const uint64_t bytes = roce::kTokenLowBytes + kWordBytes * grant.payloadElems;
  if (bytes > qp_->maxWriteBytes()) {
    return errorf(
        rinaInvalidUsage,
        "%s: a slice of %u elements is %llu bytes, more than the path MTU (%u bytes), "
        "so a write would leave as several packets; run the switch with --payload %u "
        "or less",
        where.c_str(), grant.payloadElems, static_cast<unsigned long long>(bytes),
        qp_->maxWriteBytes(),
        static_cast<unsigned>((qp_->maxWriteBytes() - roce::kTokenLowBytes) / kWordBytes));
  }
  RINA_TRY(qp_->connect(switchAddr_, grant.job));
  return attach(grant);
}

Status UcSender::send(std::span<const OutDatagram> batch) {
  RINA_TRY(qp_->reap());
  for (const OutDatagram& d : batch) {
    UcWriteRequest wr;
    if (!ucWriteFor(d.bytes, &wr)) {
      return errorf(rinaInternalError,
                    "INA over RDMA UC: the client built an undecodable datagram");
    }
    RINA_TRY(post(wr));
  }
  return {};
}

}  // namespace

std::unique_ptr<InaSender> makeUcSender(std::unique_ptr<UcQueuePair> qp, uint32_t switchAddr) {
  return std::make_unique<UcSender>(std::move(qp), switchAddr);
}

}  // namespace rina::ina
