// Inputs for tests whose communicators change members (shrink, split,
// grow): element i of the buffer a member contributes depends only on the
// member's identity (its rank in the first communicator, or any number that
// stays with it), so the serial reference of any set of members is their
// values summed here, independently of the library. Floats are small
// integers, so every sum is exact in float32 whatever the order, also
// through an INA switch's fixed point.
#ifndef RINA_TESTS_SUPPORT_MEMBER_VALUES_H_
#define RINA_TESTS_SUPPORT_MEMBER_VALUES_H_

#include <cstdint>
#include <cstring>
#include <vector>

namespace rina::testing {

inline int32_t memberInt(int id, size_t i) {
  return static_cast<int32_t>((static_cast<uint64_t>(id) * 1000003u + i * 7919u) % (1u << 20)) -
         (1 << 19);
}

inline float memberFloat(int id, size_t i) {
  return static_cast<float>(static_cast<int>((static_cast<uint64_t>(id) * 31u + i * 17u) % 2001u) -
                            1000);
}

inline std::vector<int32_t> memberInts(int id, size_t count) {
  std::vector<int32_t> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = memberInt(id, i);
  return v;
}

inline std::vector<float> memberFloats(int id, size_t count) {
  std::vector<float> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = memberFloat(id, i);
  return v;
}

// The index of the first element of got that is not the sum over ids of
// memberInt (memberFloat), or -1 when all are.
inline long firstWrongInt(const std::vector<int32_t>& got, const std::vector<int>& ids) {
  for (size_t i = 0; i < got.size(); ++i) {
    uint32_t sum = 0;
    for (int id : ids) sum += static_cast<uint32_t>(memberInt(id, i));
    if (got[i] != static_cast<int32_t>(sum)) return static_cast<long>(i);
  }
  return -1;
}

inline long firstWrongFloat(const std::vector<float>& got, const std::vector<int>& ids) {
  for (size_t i = 0; i < got.size(); ++i) {
    double sum = 0;
    for (int id : ids) sum += memberFloat(id, i);
    if (got[i] != static_cast<float>(sum)) return static_cast<long>(i);
  }
  return -1;
}

}  // namespace rina::testing

#endif  // RINA_TESTS_SUPPORT_MEMBER_VALUES_H_
