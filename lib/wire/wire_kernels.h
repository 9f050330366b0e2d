// The per-element work of an INA datagram's payload (int32 values in
// network byte order, include/rina/ina_wire.h), vectorized: what the switch
// does per contribution (take the first, add the others with saturation,
// and the one that completes a slot in the same pass as the result's bytes)
// and per result, and what the hosts do per slice they send or receive.
// The scalar loops are the reference; AVX2 versions (wire_kernels_avx2.cc)
// give the same bits and are picked once by asking the CPU.
#ifndef RINA_LIB_WIRE_WIRE_KERNELS_H_
#define RINA_LIB_WIRE_WIRE_KERNELS_H_

#include <cstddef>
#include <cstdint>

namespace rina::ina {

// out[i] = the i-th network-order value at wire (wire may be unaligned).
void loadWire(const uint8_t* wire, size_t n, int32_t* out);
// The values at `in` in network order at wire.
void storeWire(const int32_t* in, size_t n, uint8_t* wire);
// acc[i] += the i-th network-order value at wire, saturating at INT32_MIN /
// INT32_MAX instead of wrapping; true when some element saturated.
bool addWireSaturating(int32_t* acc, const uint8_t* wire, size_t n);
// addWireSaturating, and the sums in network order at out as well, in one
// pass over the payload (the contribution that completes a slot: its sum is
// both kept and sent). out may be unaligned; it must not overlap acc or wire.
bool addWireSaturatingToWire(int32_t* acc, const uint8_t* wire, size_t n, uint8_t* out);
// "avx2" or "scalar": what the four above run on this CPU.
const char* wireKernelIsa();

namespace detail {
// Both versions, for tests that compare them.
void loadWireScalar(const uint8_t* wire, size_t n, int32_t* out);
void storeWireScalar(const int32_t* in, size_t n, uint8_t* wire);
bool addWireSaturatingScalar(int32_t* acc, const uint8_t* wire, size_t n);
bool addWireSaturatingToWireScalar(int32_t* acc, const uint8_t* wire, size_t n, uint8_t* out);
bool wireAvx2Supported();
void loadWireAvx2(const uint8_t* wire, size_t n, int32_t* out);
void storeWireAvx2(const int32_t* in, size_t n, uint8_t* wire);
bool addWireSaturatingAvx2(int32_t* acc, const uint8_t* wire, size_t n);
bool addWireSaturatingToWireAvx2(int32_t* acc, const uint8_t* wire, size_t n, uint8_t* out);
}  // namespace detail

}  // namespace rina::ina

#endif  // RINA_LIB_WIRE_WIRE_KERNELS_H_
