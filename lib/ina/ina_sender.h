// How an InaClient's datagrams leave for the switch: the one part of the
// client that differs between its backends. Datagrams cross this seam in the
// native layout (include/rina/ina_wire.h), each with the switch data port it
// is for; answers come back to the client's UDP socket, in either layout
// (the client reads both), or through the backend itself (receive()).
//
//   udp      sendmmsg on the client's UDP socket (native layout)
//   rdma-uc  RDMA WRITE with immediate on a UC queue pair; the NIC puts
//            the fields in the RoCEv2 headers as include/rina/ina_roce.h
//            lays them out (uc_sender.h); a switch that writes back
//            (rina-switchd --roce-raw) puts the answers in the QP's ring
#ifndef RINA_LIB_INA_INA_SENDER_H_
#define RINA_LIB_INA_INA_SENDER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>

#include "core/status.h"
#include "wire/ctrl_protocol.h"

namespace rina::ina {

struct OutDatagram {
  std::span<const uint8_t> bytes;  // header + payload, native layout
  uint16_t port = 0;               // the switch's UDP data port for its slot
};

class InaSender {
 public:
  virtual ~InaSender() = default;
  virtual const char* name() const = 0;  // "udp", "rdma-uc"
  // A new grant: an error when this backend cannot carry it.
  virtual Status setGrant(const Grant& grant) = 0;
  // Best effort, as UDP: a datagram that cannot leave counts as lost, and the
  // client's retransmission timer resends it. An error only for a broken path.
  virtual Status send(std::span<const OutDatagram> batch) = 0;

  // Who the client is in its rack (InaClient::create tells every backend).
  virtual void setMember(uint16_t /*job*/, uint64_t /*token*/, uint8_t /*worker*/,
                         uint8_t /*fanIn*/) {}
  // Answers that came through the backend rather than the client's socket,
  // fn(native datagram) for each; then receiveFd() is armed for the next.
  virtual Status receive(const std::function<void(std::span<const uint8_t>)>& /*fn*/) { return {}; }
  // Readable when receive() has something; -1: this backend receives nothing.
  virtual int receiveFd() const { return -1; }
};

// Sends from fd (not owned: the client's socket) to switchAddr (IPv4, host order).
std::unique_ptr<InaSender> makeUdpSender(int fd, uint32_t switchAddr);

}  // namespace rina::ina

#endif  // RINA_LIB_INA_INA_SENDER_H_
