// The RDMA UC backend of the INA client. Each native datagram becomes one
// UC "RDMA WRITE Only with Immediate" to the switch, whose NIC-built headers
// carry the INA fields as include/rina/ina_roce.h lays them out:
//
//   destination QP      = job            (set once, at connect)
//   RETH virtual address = slot (bit 47 shadow) << 32 | seq
//   RETH R_Key          = job token bits 63..32
//   RETH DMA length     = 4 + 4 x elems  (the write's length)
//   the write's data    = job token bits 31..0, then the payload
//   immediate           = type<<4|flags, worker, fan_in, exponent
//   PSN                 = the NIC's own count (the switch does not check it)
//
// The write goes to the switch's IPv4 address, UDP port 4791 (RoCEv2 knows no
// other), so a grant must be served on one data port; and each write must be
// one packet, so 4 x payload elements must fit the path MTU. Answers come back
// as UDP to the client's socket, in the RoCEv2 layout (rina-switchd answers a
// job in the layout its datagrams arrive in).
#ifndef RINA_LIB_INA_UC_SENDER_H_
#define RINA_LIB_INA_UC_SENDER_H_

#include <cstdint>
#include <memory>
#include <span>

#include "core/status.h"
#include "ina/ina_sender.h"
#include "rina/ina_wire.h"
#include "transport/verbs/uc_queue_pair.h"

namespace rina::ina {

// The write a native datagram becomes; the payload is its int32 values as
// they are on the wire (network order). False for bytes that do not decode.
bool ucWriteFor(std::span<const uint8_t> native, transport::verbs::UcWriteRequest* out);
// The immediate for a header (host order; the QP sends it big-endian).
uint32_t ucImmediate(const Header& h);
// The RETH virtual address for a header.
uint64_t ucRemoteAddress(const Header& h);

// switchAddr: the switch's IPv4 data-plane address (host order).
std::unique_ptr<InaSender> makeUcSender(std::unique_ptr<transport::verbs::UcQueuePair> qp,
                                        uint32_t switchAddr);

}  // namespace rina::ina

#endif  // RINA_LIB_INA_UC_SENDER_H_
