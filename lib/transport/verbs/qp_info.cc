#include "transport/verbs/qp_info.h"

#include <cstring>

#include "transport/verbs/credits.h"

namespace rina::transport::verbs {
namespace {

constexpr uint32_t kMagic = 0x50514952;  // "RIQP"
constexpr uint32_t kVersion = 1;

class Writer {
 public:
  explicit Writer(QpInfoWire* w) : w_(w) {}
  void put(uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) (*w_)[pos_++] = static_cast<uint8_t>(v >> (8 * i));
  }
  void putBytes(const uint8_t* p, size_t n) {
    std::memcpy(w_->data() + pos_, p, n);
    pos_ += n;
  }

 private:
  QpInfoWire* w_;
  size_t pos_ = 0;
};

class Reader {
 public:
  explicit Reader(const QpInfoWire& w) : w_(w) {}
  uint64_t get(int bytes) {
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(w_[pos_++]) << (8 * i);
    return v;
  }
  void getBytes(uint8_t* p, size_t n) {
    std::memcpy(p, w_.data() + pos_, n);
    pos_ += n;
  }

 private:
  const QpInfoWire& w_;
  size_t pos_ = 0;
};

}  // namespace

QpInfoWire encodeQpInfo(const QpInfo& info) {
  QpInfoWire wire{};
  Writer w(&wire);
  w.put(kMagic, 4);
  w.put(kVersion, 4);
  w.put(info.qpn, 4);
  w.put(info.lid, 2);
  w.put(info.port, 1);
  w.put(info.gidIndex, 1);
  w.putBytes(info.gid.data(), info.gid.size());
  w.put(info.psn, 4);
  w.put(info.mtu, 4);
  w.put(info.ringAddr, 8);
  w.put(info.ringRkey, 4);
  w.put(info.slotBytes, 4);
  w.put(info.slots, 4);
  w.put(info.creditStart, 4);
  return wire;  // 72 bytes used, the rest zero (reserved)
}

Status decodeQpInfo(const QpInfoWire& wire, QpInfo* out) {
  Reader r(wire);
  uint32_t magic = static_cast<uint32_t>(r.get(4));
  uint32_t version = static_cast<uint32_t>(r.get(4));
  if (magic == 0 && version == 0) {
    return errorf(rinaRemoteError, "the peer could not set up its RDMA side (see its log)");
  }
  if (magic != kMagic)
    return errorf(rinaRemoteError, "RDMA connection info: wrong magic 0x%08x", magic);
  if (version != kVersion) {
    return errorf(rinaRemoteError, "RDMA connection info: version %u, this library speaks %u",
                  version, kVersion);
  }
  QpInfo q;
  q.qpn = static_cast<uint32_t>(r.get(4));
  q.lid = static_cast<uint16_t>(r.get(2));
  q.port = static_cast<uint8_t>(r.get(1));
  q.gidIndex = static_cast<uint8_t>(r.get(1));
  r.getBytes(q.gid.data(), q.gid.size());
  q.psn = static_cast<uint32_t>(r.get(4));
  q.mtu = static_cast<uint32_t>(r.get(4));
  q.ringAddr = r.get(8);
  q.ringRkey = static_cast<uint32_t>(r.get(4));
  q.slotBytes = static_cast<uint32_t>(r.get(4));
  q.slots = static_cast<uint32_t>(r.get(4));
  q.creditStart = static_cast<uint32_t>(r.get(4));
  const char* bad = q.qpn == 0 || q.qpn > 0xffffff ? "QP number"
                    : q.psn > 0xffffff             ? "PSN"
                    : !validSlotCount(q.slots)     ? "ring slot count"
                    : q.slotBytes < 64 || q.slotBytes % 64 != 0 || q.slotBytes > (1u << 30)
                        ? "ring slot size"
                    : q.ringAddr == 0              ? "ring address"
                    : q.mtu < 1 || q.mtu > 5       ? "MTU"
                    : q.creditStart > kCounterMask ? "credit counter"
                                                   : nullptr;
  if (bad) return errorf(rinaRemoteError, "RDMA connection info: invalid %s", bad);
  *out = q;
  return {};
}

}  // namespace rina::transport::verbs
