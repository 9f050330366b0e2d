#include "inanet/wire_kernels.h"

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

bool addWireSaturatingScalar(int32_t* acc, const uint8_t* wire, size_t n) {
  int32_t overflow = 0;
  for (size_t i = 0; i < n; ++i) {
    uint32_t be;
    std::memcpy(&be, wire + 4 * i, 4);
    const int32_t a = acc[i];
    const int32_t x = static_cast<int32_t>(ntohl(be));
    const int32_t sum = static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(x));
    // Overflow iff both operands' signs differ from the sum's; then the
    // sum saturates toward a's sign.
    const int32_t o = ((a ^ sum) & (x ^ sum)) >> 31;  // -1 on overflow, else 0
    const int32_t saturated = (a >> 31) ^ INT32_MAX;  // INT32_MIN if a < 0, else INT32_MAX
    acc[i] = (sum & ~o) | (saturated & o);
    overflow |= o;
  }
  return overflow != 0;
}

}  // namespace detail

namespace {

struct WireKernels {
  void (*load)(const uint8_t*, size_t, int32_t*);
  void (*store)(const int32_t*, size_t, uint8_t*);
  bool (*add)(int32_t*, const uint8_t*, size_t);
  const char* isa;
};

const WireKernels& kernels() {
  static const WireKernels k = detail::wireAvx2Supported()
                                   ? WireKernels{detail::loadWireAvx2, detail::storeWireAvx2,
                                                 detail::addWireSaturatingAvx2, "avx2"}
                                   : WireKernels{detail::loadWireScalar, detail::storeWireScalar,
                                                 detail::addWireSaturatingScalar, "scalar"};
  return k;
}

}  // namespace

void loadWire(const uint8_t* wire, size_t n, int32_t* out) { kernels().load(wire, n, out); }
void storeWire(const int32_t* in, size_t n, uint8_t* wire) { kernels().store(in, n, wire); }
bool addWireSaturating(int32_t* acc, const uint8_t* wire, size_t n) {
  return kernels().add(acc, wire, n);
}
const char* wireKernelIsa() { return kernels().isa; }

}  // namespace rina::ina
