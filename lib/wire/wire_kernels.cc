#include "wire/wire_kernels.h"

#include <arpa/inet.h>

#include <climits>
#include <cstring>

namespace rina::ina {
namespace detail {

void loadWireScalar(const uint8_t* wire, size_t n, int32_t* out) {
  for (size_t i = 0; i < n; ++i) {
    uint32_t be;
    std::memcpy(&be, wire + 4 * i, 4);
    out[i] = static_cast<int32_t>(ntohl(be));
  }
}

void storeWireScalar(const int32_t* in, size_t n, uint8_t* wire) {
  for (size_t i = 0; i < n; ++i) {
    const uint32_t be = htonl(static_cast<uint32_t>(in[i]));
    std::memcpy(wire + 4 * i, &be, 4);
  }
}

namespace {

// a + x, saturating toward a's sign instead of wrapping; *overflow gets -1
// when it saturated.
inline int32_t addSaturating(int32_t a, int32_t x, int32_t* overflow) {
  const int32_t sum = static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(x));
  // Overflow iff both operands' signs differ from the sum's; then the
  // sum saturates toward a's sign.
  const int32_t o = ((a ^ sum) & (x ^ sum)) >> 31;  // -1 on overflow, else 0
  const int32_t saturated = (a >> 31) ^ INT32_MAX;  // INT32_MIN if a < 0, else INT32_MAX
  *overflow |= o;
  return (sum & ~o) | (saturated & o);
}

inline int32_t wireWord(const uint8_t* p) {
  uint32_t be;
  std::memcpy(&be, p, 4);
  return static_cast<int32_t>(ntohl(be));
}

}  // namespace

bool addWireSaturatingScalar(int32_t* acc, const uint8_t* wire, size_t n) {
  int32_t overflow = 0;
  for (size_t i = 0; i < n; ++i) acc[i] = addSaturating(acc[i], wireWord(wire + 4 * i), &overflow);
  return overflow != 0;
}

bool addWireSaturatingToWireScalar(int32_t* acc, const uint8_t* wire, size_t n, uint8_t* out) {
  int32_t overflow = 0;
  for (size_t i = 0; i < n; ++i) {
    acc[i] = addSaturating(acc[i], wireWord(wire + 4 * i), &overflow);
    const uint32_t be = htonl(static_cast<uint32_t>(acc[i]));
    std::memcpy(out + 4 * i, &be, 4);
  }
  return overflow != 0;
}

}  // namespace detail

namespace {

struct WireKernels {
  void (*load)(const uint8_t*, size_t, int32_t*);
  void (*store)(const int32_t*, size_t, uint8_t*);
  bool (*add)(int32_t*, const uint8_t*, size_t);
  bool (*addToWire)(int32_t*, const uint8_t*, size_t, uint8_t*);
  const char* isa;
};

const WireKernels& kernels() {
  static const WireKernels k =
      detail::wireAvx2Supported()
          ? WireKernels{detail::loadWireAvx2, detail::storeWireAvx2, detail::addWireSaturatingAvx2,
                        detail::addWireSaturatingToWireAvx2, "avx2"}
          : WireKernels{detail::loadWireScalar, detail::storeWireScalar,
                        detail::addWireSaturatingScalar, detail::addWireSaturatingToWireScalar,
                        "scalar"};
  return k;
}

}  // namespace

void loadWire(const uint8_t* wire, size_t n, int32_t* out) { kernels().load(wire, n, out); }
void storeWire(const int32_t* in, size_t n, uint8_t* wire) { kernels().store(in, n, wire); }
bool addWireSaturating(int32_t* acc, const uint8_t* wire, size_t n) {
  return kernels().add(acc, wire, n);
}
bool addWireSaturatingToWire(int32_t* acc, const uint8_t* wire, size_t n, uint8_t* out) {
  return kernels().addToWire(acc, wire, n, out);
}
const char* wireKernelIsa() { return kernels().isa; }

}  // namespace rina::ina
