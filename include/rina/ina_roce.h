// The INA datagram in the RoCEv2 layout: what an RDMA NIC sends for a UC
// "RDMA WRITE Only with Immediate" to UDP port 4791, with the INA header
// fields carried in the RDMA headers (p4_agent/README.md, "INA over RDMA").
//
//   BTH (12 bytes, InfiniBand base transport header)
//    0   1   opcode 0x2B (UC RDMA WRITE Only with Immediate)
//    1   1   SE 0 | M 0 | pad count 0 | transport version 0
//    2   2   partition key 0xFFFF
//    4   1   reserved 0
//    5   3   destination QP = job id (bits 23..16 zero)
//    8   1   ack request 0 | reserved 0
//    9   3   PSN: the sender's; not checked (see below). Answers: seq mod 2^24
//   RETH (16 bytes)
//   12   8   virtual address: bits 47..32 slot (bit 47 = shadow set),
//            bits 31..0 seq; bits 63..48 zero
//   20   4   R_Key = job token bits 63..32
//   24   4   DMA length = 4 + 4 x elems
//   ImmDt (4 bytes)
//   28   1   type (high nibble) | flags (low nibble)
//   29   1   worker
//   30   1   fan_in
//   31   1   exponent (int8)
//   the write's data (DMA length bytes)
//   32   4   job token bits 31..0
//   36       payload: elems x int32, network order (as ina_wire.h)
//   end  4   ICRC (carried, not checked: see p4_agent/README.md)
//
// The switch's answers use the same layout, addressed to the sender. The
// translation to and from the native header (ina_wire.h) is lossless, so
// rina-switchd runs one pipeline for both.
//
// The token is 64 bits and the R_Key 32: the low word leads the written
// data, where the native header has it too (just before the payload), so a
// UC sender writes native bytes 20 .. end unchanged.
//
// The PSN is not part of the INA header: a UC requester (the NIC) numbers
// its packets per queue pair, one more for each, so a resent slice leaves
// with a new PSN and slices a worker never sends (a broadcast it receives)
// leave gaps; the seq lives in the virtual address. Requiring PSN == seq
// would make every retransmission from a real NIC malformed.
#ifndef RINA_INA_ROCE_H_
#define RINA_INA_ROCE_H_

#include <arpa/inet.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "rina/ina_wire.h"

namespace rina::ina::roce {

inline constexpr uint16_t kUdpPort = 4791;
inline constexpr uint8_t kOpUcWriteOnlyImm = 0x2B;
inline constexpr uint16_t kDefaultPkey = 0xFFFF;
inline constexpr size_t kBthBytes = 12;
inline constexpr size_t kRethBytes = 16;
inline constexpr size_t kImmBytes = 4;
inline constexpr size_t kTokenLowBytes = 4;  // the write's first word
inline constexpr size_t kIcrcBytes = 4;
inline constexpr size_t kHeaderBytes = kBthBytes + kRethBytes + kImmBytes + kTokenLowBytes;  // 36
inline constexpr size_t kOverheadBytes = kHeaderBytes + kIcrcBytes;
inline constexpr size_t kMaxDatagramBytes = kOverheadBytes + 4 * kMaxPayloadElems;

enum class RoceError : uint8_t {
  kOk = 0,
  kTruncated,   // shorter than the headers and ICRC
  kBadOpcode,   // not UC WRITE Only with Immediate
  kBadBth,      // SE/M/pad/version, partition key, reserved bits, QP above 16 bits
  kBadAddress,  // VA bits 63..48 set
  kBadLength,   // DMA length not 4 + 4 x the payload, or datagram length off
  kBadHeader,   // the INA fields fail ina::validate()
  kCount
};

inline const char* roceErrorName(RoceError e) {
  static constexpr const char* kNames[] = {"ok",          "truncated",  "bad_opcode", "bad_bth",
                                           "bad_address", "bad_length", "bad_header"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == static_cast<size_t>(RoceError::kCount));
  auto i = static_cast<size_t>(e);
  return i < static_cast<size_t>(RoceError::kCount) ? kNames[i] : "unknown";
}

namespace detail {
inline void put16(uint8_t* p, uint16_t v) {
  v = htons(v);
  std::memcpy(p, &v, 2);
}
inline void put32(uint8_t* p, uint32_t v) {
  v = htonl(v);
  std::memcpy(p, &v, 4);
}
inline uint16_t get16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return ntohs(v);
}
inline uint32_t get32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return ntohl(v);
}
}  // namespace detail

// Headers for h (h.elems payload values follow, then the ICRC) into
// out[0, kHeaderBytes). False, writing nothing, if h does not validate.
inline bool encodeHeaders(const Header& h, std::span<uint8_t> out) {
  if (out.size() < kHeaderBytes || validate(h) != DecodeError::kOk) return false;
  uint8_t* p = out.data();
  std::memset(p, 0, kHeaderBytes);
  p[0] = kOpUcWriteOnlyImm;
  detail::put16(p + 2, kDefaultPkey);
  detail::put32(p + 4, h.job);  // byte 4 reserved stays 0: job < 2^16
  detail::put32(p + 8, h.seq & 0xFFFFFFu);
  const uint16_t slot = static_cast<uint16_t>(h.slot | (h.shadow ? kShadowBit : 0));
  detail::put32(p + 12, slot);   // VA high word
  detail::put32(p + 16, h.seq);  // VA low word
  detail::put32(p + 20, static_cast<uint32_t>(h.token >> 32));
  detail::put32(p + 24, static_cast<uint32_t>(kTokenLowBytes + 4u * h.elems));
  p[28] = static_cast<uint8_t>(static_cast<uint8_t>(h.type) << 4 | h.flags);
  p[29] = h.worker;
  p[30] = h.fanIn;
  p[31] = static_cast<uint8_t>(h.exponent);
  detail::put32(p + 32, static_cast<uint32_t>(h.token));
  return true;
}

// Header, payload (host order) and a zero ICRC into out; returns the length or 0.
inline size_t encode(const Header& h, std::span<const int32_t> payload, std::span<uint8_t> out) {
  const size_t len = kOverheadBytes + 4 * static_cast<size_t>(h.elems);
  if (payload.size() != h.elems || out.size() < len || !encodeHeaders(h, out)) return 0;
  encodePayload(payload.data(), payload.size(), out.data() + kHeaderBytes);
  std::memset(out.data() + len - kIcrcBytes, 0, kIcrcBytes);
  return len;
}

// Parses a whole RoCEv2 datagram (UDP payload). The payload starts at
// data + kHeaderBytes and holds h->elems values.
inline RoceError decode(std::span<const uint8_t> data, Header* h) {
  if (data.size() < kOverheadBytes) return RoceError::kTruncated;
  const uint8_t* p = data.data();
  if (p[0] != kOpUcWriteOnlyImm) return RoceError::kBadOpcode;
  if (p[1] != 0 || detail::get16(p + 2) != kDefaultPkey || p[4] != 0 || p[5] != 0 || p[8] != 0) {
    return RoceError::kBadBth;
  }
  const uint32_t vaHigh = detail::get32(p + 12);
  if (vaHigh > 0xFFFF) return RoceError::kBadAddress;
  const uint32_t dmaLength = detail::get32(p + 24);
  const size_t payloadBytes = data.size() - kOverheadBytes;
  if (dmaLength != kTokenLowBytes + payloadBytes || payloadBytes % 4 != 0) {
    return RoceError::kBadLength;
  }
  if (payloadBytes / 4 > kMaxPayloadElems) return RoceError::kBadLength;
  Header out;
  out.job = static_cast<uint16_t>(detail::get32(p + 4) & 0xFFFF);
  out.slot = static_cast<uint16_t>(vaHigh & ~uint32_t{kShadowBit});
  out.shadow = (vaHigh & kShadowBit) != 0;
  out.seq = detail::get32(p + 16);
  out.token = uint64_t{detail::get32(p + 20)} << 32 | detail::get32(p + 32);
  out.elems = static_cast<uint16_t>(payloadBytes / 4);
  const uint8_t typeFlags = p[28];
  out.type = static_cast<Type>(typeFlags >> 4);
  out.flags = typeFlags & 0xF;
  out.worker = p[29];
  out.fanIn = p[30];
  out.exponent = static_cast<int8_t>(p[31]);
  if (validate(out) != DecodeError::kOk) return RoceError::kBadHeader;
  *h = out;
  return RoceError::kOk;
}

// Translations; the payload bytes are copied unchanged (both are int32 in
// network order). Return the output length, 0 on a bad input or short out.
inline size_t toNative(std::span<const uint8_t> datagram, std::span<uint8_t> out, RoceError* err) {
  Header h;
  *err = ::rina::ina::roce::decode(datagram, &h);  // qualified: ADL also finds ina::decode
  if (*err != RoceError::kOk) return 0;
  const size_t len = ina::kHeaderBytes + 4 * static_cast<size_t>(h.elems);
  if (out.size() < len || !encodeHeader(h, out)) return 0;
  std::memcpy(out.data() + ina::kHeaderBytes, datagram.data() + kHeaderBytes, 4 * h.elems);
  return len;
}

inline size_t fromNative(std::span<const uint8_t> native, std::span<uint8_t> out) {
  Header h;
  if (ina::decode(native, &h) != DecodeError::kOk) return 0;
  const size_t len = kOverheadBytes + 4 * static_cast<size_t>(h.elems);
  if (out.size() < len || !encodeHeaders(h, out)) return 0;
  std::memcpy(out.data() + kHeaderBytes, native.data() + ina::kHeaderBytes, 4 * h.elems);
  std::memset(out.data() + len - kIcrcBytes, 0, kIcrcBytes);
  return len;
}

// Answers through the NIC (rina-switchd --roce-raw; p4_agent/README.md,
// "Answers through the NIC"): a UC client tells the switch where its QP
// takes writes with one CTRL datagram through that QP (slot 0, seq 0, the
// rack's job, token, worker and fan-in), whose payload is kAttachWords
// int32 words (network order). The switch then writes each answer for that
// worker, the native datagram (ina_wire.h) whole, as one UC RDMA WRITE with
// immediate into ring slot ringSlotFor(slot, shadow), the immediate naming
// the slot; slot 0 takes the switch's header-only CTRL acknowledgement.
inline constexpr uint32_t kAttachMagic = 0x524E4943;  // "RNIC"
inline constexpr uint16_t kAttachWords = 8;

struct RingAttach {
  uint32_t qpn = 0;  // 24 bits
  uint32_t psn = 0;  // 24 bits: the first PSN it expects
  uint64_t addr = 0;
  uint32_t rkey = 0;
  uint32_t slots = 0;      // 3 .. 4097: slot 0 and 2 per aggregator slot
  uint32_t slotBytes = 0;  // 64 .. 65536, a multiple of 64: one packet
};

inline void encodeAttach(const RingAttach& a, int32_t (&words)[kAttachWords]) {
  const uint32_t w[kAttachWords] = {kAttachMagic,
                                    a.qpn,
                                    a.psn,
                                    static_cast<uint32_t>(a.addr >> 32),
                                    static_cast<uint32_t>(a.addr),
                                    a.rkey,
                                    a.slots,
                                    a.slotBytes};
  for (size_t i = 0; i < kAttachWords; ++i) words[i] = static_cast<int32_t>(w[i]);
}

// From the payload words in host order; false for values no real QP has.
inline bool decodeAttach(const int32_t (&words)[kAttachWords], RingAttach* out) {
  uint32_t w[kAttachWords];
  for (size_t i = 0; i < kAttachWords; ++i) w[i] = static_cast<uint32_t>(words[i]);
  RingAttach a;
  a.qpn = w[1];
  a.psn = w[2];
  a.addr = uint64_t{w[3]} << 32 | w[4];
  a.rkey = w[5];
  a.slots = w[6];
  a.slotBytes = w[7];
  if (w[0] != kAttachMagic || a.qpn == 0 || a.qpn > 0xFFFFFF || a.psn > 0xFFFFFF || a.addr == 0 ||
      a.slots < 3 || a.slots > 4097 || a.slotBytes < 64 || a.slotBytes > 65536 ||
      a.slotBytes % 64 != 0 || a.addr + uint64_t{a.slots} * a.slotBytes < a.addr) {
    return false;
  }
  *out = a;
  return true;
}

// The ring slot of an answer for aggregator slot `slot` (set `shadow`):
// a job's window is contiguous, so its 2 W sets get distinct ring slots
// while 2 W <= ringSlots - 1.
inline uint32_t ringSlotFor(uint16_t slot, bool shadow, uint32_t ringSlots) {
  return 1 + (2 * uint32_t{slot} + (shadow ? 1 : 0)) % (ringSlots - 1);
}

}  // namespace rina::ina::roce

#endif  // RINA_INA_ROCE_H_
