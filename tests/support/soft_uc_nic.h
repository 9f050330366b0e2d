// A software stand-in for an RDMA NIC's UC send queue: each posted write
// becomes the RoCEv2 packet a NIC would put on the wire (the UDP payload:
// BTH, RETH, ImmDt, data, ICRC), built here from the InfiniBand
// specification's header layout, not from include/rina/ina_roce.h, and sent
// over UDP to the switch. PSNs count from firstPsn per packet, as a UC
// requester numbers them (a resent slice gets a new one).
#ifndef RINA_TESTS_SUPPORT_SOFT_UC_NIC_H_
#define RINA_TESTS_SUPPORT_SOFT_UC_NIC_H_

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "core/socket.h"
#include "transport/verbs/uc_queue_pair.h"
#include "wire/endpoint.h"

namespace rina::ina::testing {

// The packet a UC requester sends for one RDMA WRITE Only with Immediate.
std::vector<uint8_t> ucWritePacket(uint32_t destQpn, uint32_t psn,
                                   const transport::verbs::UcWriteRequest& wr);

class SoftUcNic : public transport::verbs::UcQueuePair {
 public:
  // Packets go to target (the switch's RoCE port; a NIC would use UDP 4791).
  // depth: writes in flight before post() reports a full queue; stuck: reap()
  // frees nothing (a NIC that stopped completing).
  SoftUcNic(Endpoint target, uint32_t mtuBytes, uint32_t firstPsn, uint32_t depth = 256,
            bool stuck = false);
  const std::string& device() const override { return name_; }
  uint32_t maxWriteBytes() const override { return mtu_; }
  Status connect(uint32_t ipv4, uint32_t remoteQpn) override;
  Status post(const transport::verbs::UcWriteRequest& wr, bool* posted) override;
  Status reap() override;

  uint32_t connectedIpv4() const { return ipv4_; }
  uint32_t destQpn() const { return qpn_; }
  int connects() const { return connects_; }
  uint64_t packets() const { return packets_; }
  // The last few packets sent, oldest first.
  const std::deque<std::vector<uint8_t>>& recent() const { return recent_; }

 private:
  std::string name_ = "softuc_0";
  Endpoint target_;
  uint32_t mtu_;
  uint32_t psn_;
  uint32_t depth_;
  bool stuck_;
  Fd socket_;
  uint32_t ipv4_ = 0;
  uint32_t qpn_ = 0;
  int connects_ = 0;
  uint32_t inFlight_ = 0;
  uint64_t packets_ = 0;
  std::deque<std::vector<uint8_t>> recent_;
};

}  // namespace rina::ina::testing

#endif  // RINA_TESTS_SUPPORT_SOFT_UC_NIC_H_
