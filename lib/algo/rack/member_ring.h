// The member ring under rina and hier (member_ring.cc; the entry points are
// hierAllReduce and inaMemberRingAllReduce in rack.h). What is exported
// here is its slicing rule, which the planner's tests check by hand.
#ifndef RINA_LIB_ALGO_RACK_MEMBER_RING_H_
#define RINA_LIB_ALGO_RACK_MEMBER_RING_H_

#include <cstddef>

namespace rina::algo {

// The member ring's pipeline slice, in elements: RINA_SLICE_BYTES at most,
// and small enough that a chunk of chunkElems has about
// kMemberSlicesPerStep slices per ring step, but not under
// kMinMemberSliceBytes; a multiple of kMemberSliceAlignElems (whole INA
// datagrams) unless RINA_SLICE_BYTES is smaller. The ring runs as a
// wavefront over (step, slice): with few slices per chunk much of a
// collective is the wavefront filling and draining, while the rack's switch
// reduce-scatter runs ahead at the start and its all-gather is left at the
// end, each with the other direction of the host link half idle
// (perf/results/lab-b-two-racks-ab-finer-slices.md: why 32). Every rank
// computes the same value.
inline constexpr size_t kMemberSlicesPerStep = 32;
inline constexpr size_t kMinMemberSliceBytes = 16 * 1024;
inline constexpr size_t kMemberSliceAlignElems = 2048;  // ina::kMaxPayloadElems
size_t memberSliceElems(size_t chunkElems, int steps, size_t elemBytes, size_t sliceBytes);

}  // namespace rina::algo

#endif  // RINA_LIB_ALGO_RACK_MEMBER_RING_H_
