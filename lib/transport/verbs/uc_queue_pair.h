// The send side of one unreliable-connected (UC) queue pair: RDMA WRITE with
// immediate to one remote QP, one packet per write, nothing acknowledged.
// The INA UC client (lib/ina/uc_sender.h) posts its contributions through
// it; openUcQueuePair() makes one on an RDMA device with libibverbs, and the
// tests put a software NIC behind the same interface.
#ifndef RINA_LIB_TRANSPORT_VERBS_UC_QUEUE_PAIR_H_
#define RINA_LIB_TRANSPORT_VERBS_UC_QUEUE_PAIR_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "core/status.h"
#include "transport/verbs/verbs_context.h"

namespace rina::transport::verbs {

// One write: the RETH fields, the immediate (host order; the QP sends it in
// network order) and the bytes to write.
struct UcWriteRequest {
  uint64_t remoteAddr = 0;
  uint32_t rkey = 0;
  uint32_t imm = 0;
  std::span<const uint8_t> payload;
};

// Where a switch may write answers into a UC queue pair: RDMA WRITE with
// immediate into one of `slots` slots of `slotBytes` at addr (rkey), the
// immediate naming the slot; each write must be one packet.
struct UcReceiveRing {
  uint32_t qpn = 0;
  uint32_t psn = 0;  // the first PSN it expects (UC takes any on a new message)
  uint64_t addr = 0;
  uint32_t rkey = 0;
  uint32_t slots = 0;
  uint32_t slotBytes = 0;
};

class UcQueuePair {
 public:
  virtual ~UcQueuePair() = default;
  virtual const std::string& device() const = 0;
  // The largest write that leaves as one "Only" packet: the path MTU.
  virtual uint32_t maxWriteBytes() const = 0;
  // RoCEv2: the remote is the IPv4-mapped GID of ipv4 (host order), QP remoteQpn.
  virtual Status connect(uint32_t ipv4, uint32_t remoteQpn) = 0;
  // Posts one write; *posted = false (nothing done) while the send queue is full.
  virtual Status post(const UcWriteRequest& wr, bool* posted) = 0;
  // Takes send completions, which frees send-queue entries; a failed one is an error.
  virtual Status reap() = 0;

  // The receive side, where the QP has one (false: answers come by UDP).
  virtual bool receiveRing(UcReceiveRing* /*out*/) const { return false; }
  // fn(bytes) for every write that landed in the ring since the last call,
  // in arrival order; then arms receiveFd() for the next. A write whose slot
  // changed while it was copied out (the sender reused it) is left out.
  virtual Status receive(const std::function<void(std::span<const uint8_t>)>& /*fn*/) { return {}; }
  // Readable when receive() has something (after a receive() call); -1: none.
  virtual int receiveFd() const { return -1; }
};

// A UC QP on ctx's device and port (RINA_IB_GID_INDEX as for RC). Without
// libibverbs: rinaSystemError "built without libibverbs".
Status openUcQueuePair(const VerbsContextPtr& ctx, std::unique_ptr<UcQueuePair>* out);

}  // namespace rina::transport::verbs

#endif  // RINA_LIB_TRANSPORT_VERBS_UC_QUEUE_PAIR_H_
