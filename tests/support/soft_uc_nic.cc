#include "soft_uc_nic.h"

#include <sys/socket.h>

#include "wire/net.h"

namespace rina::ina::testing {
namespace {

void bigEndian(std::vector<uint8_t>& out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

}  // namespace

std::vector<uint8_t> ucWritePacket(uint32_t destQpn, uint32_t psn,
                                   const transport::verbs::UcWriteRequest& wr) {
  std::vector<uint8_t> p;
  // BTH (IBA 9.2): OpCode; SE, MigReq, PadCnt, TVer; P_Key; FECN/BECN and
  // reserved; DestQP (24); AckReq and reserved; PSN (24).
  p.push_back(0x2B);        // UC (0b001xxxxx), RDMA WRITE Only with Immediate (0b01011)
  p.push_back(0x00);        // no solicited event, no migration, 4-byte multiple, version 0
  bigEndian(p, 0xFFFF, 2);  // default partition
  p.push_back(0x00);
  bigEndian(p, destQpn & 0xFFFFFF, 3);
  p.push_back(0x00);  // UC never asks for an ACK
  bigEndian(p, psn & 0xFFFFFF, 3);
  // RETH (IBA 9.3.3): VirtualAddress (64), R_Key (32), DMALength (32).
  bigEndian(p, wr.remoteAddr, 8);
  bigEndian(p, wr.rkey, 4);
  bigEndian(p, wr.payload.size(), 4);
  // ImmDt (IBA 9.3.5): 32 bits as given, big-endian on the wire.
  bigEndian(p, wr.imm, 4);
  p.insert(p.end(), wr.payload.begin(), wr.payload.end());
  bigEndian(p, 0, 4);  // ICRC: not computed (switchd carries it unchecked)
  return p;
}

SoftUcNic::SoftUcNic(Endpoint target, uint32_t mtuBytes, uint32_t firstPsn, uint32_t depth,
                     bool stuck)
    : target_(target), mtu_(mtuBytes), psn_(firstPsn), depth_(depth), stuck_(stuck) {
  (void)openUdpSocket(Endpoint{0x7F000001, 0}, 1 << 20, &socket_);
}

Status SoftUcNic::connect(uint32_t ipv4, uint32_t remoteQpn) {
  ipv4_ = ipv4;
  qpn_ = remoteQpn;
  ++connects_;
  return {};
}

Status SoftUcNic::post(const transport::verbs::UcWriteRequest& wr, bool* posted) {
  *posted = false;
  if (wr.payload.size() > mtu_) {
    return errorf(rinaInvalidUsage, "soft NIC: %zu-byte write above the MTU", wr.payload.size());
  }
  if (inFlight_ >= depth_) return {};
  std::vector<uint8_t> packet = ucWritePacket(qpn_, psn_, wr);
  psn_ = (psn_ + 1) & 0xFFFFFF;
  ++inFlight_;
  ++packets_;
  sockaddr_in to = target_.toSockaddr();
  // A datagram the kernel drops is a lost packet, as on a wire.
  (void)::sendto(socket_.get(), packet.data(), packet.size(), 0,
                 reinterpret_cast<const sockaddr*>(&to), sizeof to);
  recent_.push_back(std::move(packet));
  if (recent_.size() > 64) recent_.pop_front();
  *posted = true;
  return {};
}

Status SoftUcNic::reap() {
  if (!stuck_) inFlight_ = 0;
  return {};
}

}  // namespace rina::ina::testing
