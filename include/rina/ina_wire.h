// The INA datagram: what hosts, rina-switchd and the P4 programs exchange.
//
// One fixed 24-byte header in network byte order, then `elems` int32 payload
// values (also network order). A 16-bit payload count keeps the header
// 4-byte aligned and lets the decoder check the datagram length against the
// header (docs/design.md, p4_agent/README.md):
//
//   off size field
//    0   1   magic (high nibble, 0x5) | version (low nibble, 2)
//    1   1   type (high nibble) | flags (low nibble)
//    2   2   job id (0 is never valid)
//    4   2   slot: bit 15 = shadow set, bits 0..14 = slot index
//    6   1   worker (index in the rack, < fan_in)
//    7   1   fan_in (contributors per slot, 1..kMaxFanIn)
//    8   4   seq (slice id within the job)
//   12   1   exponent (int8; block floating point, see lib/ina/quantize.h)
//   13   1   pad (must be 0)
//   14   2   elems (payload int32 count)
//   16   4   job token, bits 63..32
//   20   4   job token, bits 31..0
//   24       payload: elems x int32
//
// The token is 64 random bits the job's agent chose: guessing it takes 2^63
// tries on average. Version 1 (a 32-bit token, 20-byte header) is refused.
//
// A DATA datagram with elems 0 and TO_PORT is a *port marker*: the port of
// a reduce-scatter slice adds its own values on the host, so it sends only
// its bit (and the exponent it announces) and the switch counts it as a
// contribution of zeros. Any other DATA / BCAST needs a payload.
//
// The switch multicasts a BCAST's RESULT with its payload to the rack's
// other members and with elems 0 (an acknowledgement) to its root, which
// already holds the values.
//
// Header-only and free of other rina headers so that rina-switchd, the
// fuzzers and the host library share one decoder.
#ifndef RINA_INA_WIRE_H_
#define RINA_INA_WIRE_H_

#include <arpa/inet.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace rina::ina {

inline constexpr uint8_t kMagic = 0x5;
inline constexpr uint8_t kVersion = 2;
inline constexpr size_t kHeaderBytes = 24;
inline constexpr uint32_t kMaxPayloadElems = 2048;
inline constexpr uint32_t kDefaultPayloadElems = 64;
inline constexpr size_t kWordBytes = 4;  // one payload element (int32) on the wire
inline constexpr size_t kMaxDatagramBytes = kHeaderBytes + kWordBytes * kMaxPayloadElems;
inline constexpr uint32_t kMaxFanIn = 32;  // one 32-bit contributor bitmap per slot
inline constexpr uint16_t kShadowBit = 0x8000;
inline constexpr uint32_t kMaxSlots = 0x8000;  // 15-bit slot index
// Exponent sentinels (see lib/ina/quantize.h): every value in the slice is
// zero / some value cannot be quantized (NaN, Inf, too large).
inline constexpr int8_t kExponentZero = -128;
inline constexpr int8_t kExponentHost = 127;

enum class Type : uint8_t {
  kData = 1,    // a contribution, host -> switch
  kResult = 2,  // the sum, switch -> hosts; elems 0 = acknowledgement only
  kBcast = 3,   // fan-in 1 contribution the switch multicasts to the rack (root: ack only)
  kCtrl = 4,    // reserved for in-band control; the control plane is TCP
  kNack = 5,    // switch -> host: slot not (or no longer) granted to the job
};

enum Flags : uint8_t {
  kFlagResend = 0x1,    // host: a retransmission; switch: a stored result resent
  kFlagOverflow = 0x2,  // the int32 sum saturated; the payload is not the sum
  kFlagLast = 0x4,      // last slice of a call (informational)
  kFlagToPort = 0x8,    // sender is the port: the result goes to it alone
};

// The header in host byte order.
struct Header {
  Type type = Type::kData;
  uint8_t flags = 0;
  uint16_t job = 0;
  uint16_t slot = 0;  // index, without the shadow bit
  bool shadow = false;
  uint8_t worker = 0;
  uint8_t fanIn = 1;
  uint32_t seq = 0;
  int8_t exponent = 0;
  uint16_t elems = 0;
  uint64_t token = 0;
};

// The bytes on the wire; decode through memcpy, never by casting a buffer.
struct WireHeader {
  uint8_t magicVersion;
  uint8_t typeFlags;
  uint16_t job;
  uint16_t slot;
  uint8_t worker;
  uint8_t fanIn;
  uint32_t seq;
  int8_t exponent;
  uint8_t pad;
  uint16_t elems;
  uint32_t tokenHigh;  // two words: a uint64_t would make the header 8-byte aligned
  uint32_t tokenLow;
};
static_assert(sizeof(WireHeader) == kHeaderBytes, "INA header must be 24 bytes");
static_assert(alignof(WireHeader) == 4, "INA header must be 4-byte aligned");
static_assert(offsetof(WireHeader, seq) == 8 && offsetof(WireHeader, tokenHigh) == 16 &&
                  offsetof(WireHeader, tokenLow) == 20,
              "INA header fields must sit at their documented offsets");
static_assert(kMaxDatagramBytes <= 65507, "INA datagram must fit one UDP datagram");

enum class DecodeError : uint8_t {
  kOk = 0,
  kTruncated,  // shorter than the header
  kBadMagic,
  kBadVersion,
  kBadType,
  kBadPad,
  kBadLength,     // datagram length disagrees with elems
  kOversized,     // elems above kMaxPayloadElems
  kBadFanIn,      // 0 or above kMaxFanIn
  kBadWorker,     // worker >= fan_in
  kBadJob,        // job 0
  kEmptyPayload,  // DATA / BCAST without payload (other than a port marker)
  kCount
};

inline const char* decodeErrorName(DecodeError e) {
  static constexpr const char* kNames[] = {
      "ok",         "truncated", "bad_magic", "bad_version", "bad_type", "bad_pad",
      "bad_length", "oversized", "bad_fanin", "bad_worker",  "bad_job",  "empty_payload"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == static_cast<size_t>(DecodeError::kCount));
  auto i = static_cast<size_t>(e);
  return i < static_cast<size_t>(DecodeError::kCount) ? kNames[i] : "unknown";
}

// A DATA header-only contribution from a slice's port (see the top).
inline bool isPortMarker(const Header& h) {
  return h.type == Type::kData && h.elems == 0 && (h.flags & kFlagToPort);
}

// Checks every field of a host-order header; the same rules as decode().
inline DecodeError validate(const Header& h) {
  auto t = static_cast<uint8_t>(h.type);
  if (t < static_cast<uint8_t>(Type::kData) || t > static_cast<uint8_t>(Type::kNack)) {
    return DecodeError::kBadType;
  }
  if (h.flags > 0xF) return DecodeError::kBadType;
  if (h.elems > kMaxPayloadElems) return DecodeError::kOversized;
  if (h.job == 0) return DecodeError::kBadJob;
  if (h.fanIn == 0 || h.fanIn > kMaxFanIn) return DecodeError::kBadFanIn;
  if (h.worker >= h.fanIn) return DecodeError::kBadWorker;
  if (h.slot >= kMaxSlots) return DecodeError::kBadLength;
  if ((h.type == Type::kData || h.type == Type::kBcast) && h.elems == 0 && !isPortMarker(h)) {
    return DecodeError::kEmptyPayload;
  }
  return DecodeError::kOk;
}

// Writes the header into out[0, kHeaderBytes). Returns false (and writes
// nothing) if the header does not validate.
inline bool encodeHeader(const Header& h, std::span<uint8_t> out) {
  if (out.size() < kHeaderBytes || validate(h) != DecodeError::kOk) return false;
  WireHeader w{};
  w.magicVersion = static_cast<uint8_t>(kMagic << 4 | kVersion);
  w.typeFlags = static_cast<uint8_t>(static_cast<uint8_t>(h.type) << 4 | h.flags);
  w.job = htons(h.job);
  w.slot = htons(static_cast<uint16_t>(h.slot | (h.shadow ? kShadowBit : 0)));
  w.worker = h.worker;
  w.fanIn = h.fanIn;
  w.seq = htonl(h.seq);
  w.exponent = h.exponent;
  w.pad = 0;
  w.elems = htons(h.elems);
  w.tokenHigh = htonl(static_cast<uint32_t>(h.token >> 32));
  w.tokenLow = htonl(static_cast<uint32_t>(h.token));
  std::memcpy(out.data(), &w, sizeof w);
  return true;
}

// n host-order int32 values to network order at out, and back. Plain loops
// the compiler vectorizes (byte swaps).
inline void encodePayload(const int32_t* values, size_t n, uint8_t* out) {
  for (size_t i = 0; i < n; ++i) {
    uint32_t be = htonl(static_cast<uint32_t>(values[i]));
    std::memcpy(out + 4 * i, &be, 4);
  }
}
inline void decodePayload(const uint8_t* in, size_t n, int32_t* values) {
  for (size_t i = 0; i < n; ++i) {
    uint32_t be;
    std::memcpy(&be, in + 4 * i, 4);
    values[i] = static_cast<int32_t>(ntohl(be));
  }
}

// Header plus payload (host-order int32 values, h.elems of them) into out.
// Returns the datagram length, or 0 if the header is invalid, the payload
// size disagrees with h.elems, or out is too small.
inline size_t encode(const Header& h, std::span<const int32_t> payload, std::span<uint8_t> out) {
  size_t len = kHeaderBytes + 4 * static_cast<size_t>(h.elems);
  if (payload.size() != h.elems || out.size() < len || !encodeHeader(h, out)) return 0;
  encodePayload(payload.data(), payload.size(), out.data() + kHeaderBytes);
  return len;
}

// Parses and validates a whole datagram. On success *h is filled and the
// payload starts at data + kHeaderBytes (read it with payloadAt()).
inline DecodeError decode(std::span<const uint8_t> data, Header* h) {
  if (data.size() < kHeaderBytes) return DecodeError::kTruncated;
  WireHeader w;
  std::memcpy(&w, data.data(), sizeof w);
  if ((w.magicVersion >> 4) != kMagic) return DecodeError::kBadMagic;
  if ((w.magicVersion & 0xF) != kVersion) return DecodeError::kBadVersion;
  if (w.pad != 0) return DecodeError::kBadPad;
  Header out;
  out.type = static_cast<Type>(w.typeFlags >> 4);
  out.flags = w.typeFlags & 0xF;
  out.job = ntohs(w.job);
  uint16_t slot = ntohs(w.slot);
  out.slot = slot & static_cast<uint16_t>(~kShadowBit);
  out.shadow = (slot & kShadowBit) != 0;
  out.worker = w.worker;
  out.fanIn = w.fanIn;
  out.seq = ntohl(w.seq);
  out.exponent = w.exponent;
  out.elems = ntohs(w.elems);
  out.token = uint64_t{ntohl(w.tokenHigh)} << 32 | ntohl(w.tokenLow);
  if (out.elems > kMaxPayloadElems) return DecodeError::kOversized;
  if (data.size() != kHeaderBytes + 4 * static_cast<size_t>(out.elems)) {
    return DecodeError::kBadLength;
  }
  DecodeError e = validate(out);
  if (e != DecodeError::kOk) return e;
  *h = out;
  return DecodeError::kOk;
}

// Payload value i of a datagram that decoded successfully.
inline int32_t payloadAt(const uint8_t* datagram, size_t i) {
  uint32_t be;
  std::memcpy(&be, datagram + kHeaderBytes + 4 * i, 4);
  return static_cast<int32_t>(ntohl(be));
}

}  // namespace rina::ina

#endif  // RINA_INA_WIRE_H_
