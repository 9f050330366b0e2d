// Whether a buffer is mapped host memory: the check that tells a GPU pointer
// from a host one where CUDA cannot (no GPU usable, or librina built
// without CUDA).
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>

#include "cuda/cuda_support.h"

namespace rina::cuda {
namespace {

// A thread's last few buffers found mapped, as page ranges. Collectives
// pass the same few buffers call after call, and asking the kernel costs
// two mincore calls per buffer (each maps and frees a kernel page): most of
// an 8-byte allreduce's own time. A buffer inside a remembered range is
// taken as mapped without asking again. The check exists to name a GPU
// pointer given to a host path; such a pointer never lies in a range that
// was host memory while the range stays mapped, and a range the caller
// has unmapped since is the caller's use-after-free, as it would be
// anywhere else.
struct MappedRange {
  uintptr_t first = 1, last = 0;  // pages; first > last: empty
};
thread_local std::array<MappedRange, 8> tlsMapped;
thread_local unsigned tlsNext = 0;

thread_local uint64_t tlsKernelAsked = 0;

const uintptr_t kPage = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
// Pages are a power of two: a shift, not a division, on every call's check.
const int kPageShift = __builtin_ctzl(kPage);

// The pages of p[0, bytes): false when the range wraps.
bool pagesOf(const void* p, size_t bytes, uintptr_t* firstPage, uintptr_t* lastPage) {
  const auto begin = reinterpret_cast<uintptr_t>(p);
  const uintptr_t last = begin + (bytes > 0 ? bytes - 1 : 0);
  if (last < begin) return false;
  *firstPage = begin >> kPageShift;
  *lastPage = last >> kPageShift;
  return true;
}

}  // namespace

bool isMappedHostMemory(const void* p, size_t bytes) {
  uintptr_t firstPage = 0, lastPage = 0;
  if (!pagesOf(p, bytes, &firstPage, &lastPage)) return false;
  ++tlsKernelAsked;
  unsigned char vec = 0;
  for (uintptr_t pg : {firstPage, lastPage}) {
    // mincore fails with ENOMEM when the page is not mapped.
    if (mincore(reinterpret_cast<void*>(pg * kPage), 1, &vec) != 0 && errno == ENOMEM) {
      return false;
    }
  }
  return true;
}

bool isRememberedHostMemory(const void* p, size_t bytes) {
  uintptr_t firstPage = 0, lastPage = 0;
  if (!pagesOf(p, bytes, &firstPage, &lastPage)) return false;
  for (const MappedRange& r : tlsMapped) {
    if (r.first <= firstPage && lastPage <= r.last) return true;
  }
  return false;
}

bool isKnownHostMemory(const void* p, size_t bytes) {
  uintptr_t firstPage = 0, lastPage = 0;
  if (!pagesOf(p, bytes, &firstPage, &lastPage)) return false;
  if (isRememberedHostMemory(p, bytes)) return true;
  if (!isMappedHostMemory(p, bytes)) return false;
  tlsMapped[tlsNext++ % tlsMapped.size()] = MappedRange{firstPage, lastPage};
  return true;
}

uint64_t hostMemoryKernelChecksForTesting() { return tlsKernelAsked; }

}  // namespace rina::cuda
