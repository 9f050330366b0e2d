#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "cuda/cuda_support.h"

namespace rina::cuda {

bool isMappedHostMemory(const void* p, size_t bytes) {
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(p);
  const uintptr_t last = begin + (bytes > 0 ? bytes - 1 : 0);
  if (last < begin) return false;
  unsigned char vec = 0;
  for (uintptr_t addr : {begin, last}) {
    // mincore fails with ENOMEM when the page is not mapped.
    if (mincore(reinterpret_cast<void*>(addr & ~(page - 1)), 1, &vec) != 0 && errno == ENOMEM) {
      return false;
    }
  }
  return true;
}

}  // namespace rina::cuda
