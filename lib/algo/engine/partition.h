// How the algorithms cut things up: positions on a ring of ranks, a buffer
// cut into one chunk per member, and the slices a buffer is pipelined in.
#ifndef RINA_LIB_ALGO_ENGINE_PARTITION_H_
#define RINA_LIB_ALGO_ENGINE_PARTITION_H_

#include <algorithm>
#include <cstddef>

namespace rina::algo {

// a mod n in [0, n), for ring positions (a may be negative).
inline int mod(int a, int n) { return ((a % n) + n) % n; }

// Chunk c of n over count elements: sizes differ by at most one, the
// larger ones first.
struct Chunks {
  size_t count;
  int n;
  size_t begin(int c) const { return (count / n) * c + std::min<size_t>(c, count % n); }
  size_t size(int c) const { return begin(c + 1) - begin(c); }
};

// A byte range cut into the slices a chain or ring pipelines: each at most
// `slice` bytes (a whole number of elements), at least one slice (an empty
// range has one empty slice).
struct ByteSlices {
  size_t bytes;
  size_t slice;
  // The slices of `bytes` for elements of elemSize, with RINA_SLICE_BYTES
  // (sliceBytes) rounded down to whole elements, at least one element.
  static ByteSlices of(size_t bytes, size_t elemSize, size_t sliceBytes) {
    return ByteSlices{bytes, std::max(elemSize, sliceBytes / elemSize * elemSize)};
  }
  int count() const { return static_cast<int>(std::max<size_t>(1, (bytes + slice - 1) / slice)); }
  size_t offset(int j) const { return std::min(bytes, slice * j); }
  size_t size(int j) const { return std::min(bytes, offset(j) + slice) - offset(j); }
};

}  // namespace rina::algo

#endif  // RINA_LIB_ALGO_ENGINE_PARTITION_H_
