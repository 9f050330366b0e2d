#include "ina/uc_sender.h"

#include <cstddef>
#include <string>

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
      native.subspan(offsetof(WireHeader, tokenLow), roce::kTokenLowBytes + 4 * size_t{h.elems});
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

 private:
  std::unique_ptr<UcQueuePair> qp_;
  uint32_t switchAddr_;
};

Status UcSender::setGrant(const Grant& grant) {
  const std::string where = "INA over RDMA UC (" + qp_->device() + ")";
  if (grant.ports != 1) {
    return errorf(rinaInvalidUsage,
                  "%s: the switch serves job %u on %u data ports, but RoCEv2 reaches one (UDP "
                  "4791): give the switch one data port (rina-switchd --threads 1)",
                  where.c_str(), grant.job, grant.ports);
  }
  const uint64_t bytes = roce::kTokenLowBytes + 4 * uint64_t{grant.payloadElems};
  if (bytes > qp_->maxWriteBytes()) {
    return errorf(rinaInvalidUsage,
                  "%s: a slice of %u elements is %llu bytes, more than the path MTU (%u bytes), "
                  "so a write would leave as several packets; run the switch with --payload %u "
                  "or less",
                  where.c_str(), grant.payloadElems, static_cast<unsigned long long>(bytes),
                  qp_->maxWriteBytes(),
                  static_cast<unsigned>((qp_->maxWriteBytes() - roce::kTokenLowBytes) / 4));
  }
  return qp_->connect(switchAddr_, grant.job);
}

Status UcSender::send(std::span<const OutDatagram> batch) {
  RINA_TRY(qp_->reap());
  for (const OutDatagram& d : batch) {
    UcWriteRequest wr;
    if (!ucWriteFor(d.bytes, &wr)) {
      return errorf(rinaInternalError,
                    "INA over RDMA UC: the client built an undecodable datagram");
    }
    bool posted = false;
    for (int i = 0; i < kFullQueueReaps && !posted; ++i) {
      RINA_TRY(qp_->post(wr, &posted));
      if (!posted) RINA_TRY(qp_->reap());
    }
  }
  return {};
}

}  // namespace

std::unique_ptr<InaSender> makeUcSender(std::unique_ptr<UcQueuePair> qp, uint32_t switchAddr) {
  return std::make_unique<UcSender>(std::move(qp), switchAddr);
}

}  // namespace rina::ina
