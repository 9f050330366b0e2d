#include "transport/cma.h"

#include <sys/uio.h>

#include <cerrno>

namespace rina::transport {

Status readProcessMemory(int pid, uint64_t from, void* dst, size_t len) {
  char* out = static_cast<char*>(dst);
  size_t done = 0;
  // The kernel may copy less than asked (it stops at a page it cannot
  // read, or early for a large request): go on from where it stopped.
  for (int tries = 0; done < len; ++tries) {
    iovec local{out + done, len - done};
    iovec remote{reinterpret_cast<void*>(static_cast<uintptr_t>(from + done)), len - done};
    const ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (n < 0 && errno == EINTR && tries < 100) continue;
    if (n <= 0) {
      return systemErrorf(n < 0 ? errno : EFAULT,
                          "process_vm_readv of %zu bytes at 0x%llx from process %d (%zu done)", len,
                          static_cast<unsigned long long>(from), pid, done);
    }
    done += static_cast<size_t>(n);
  }
  return {};
}

}  // namespace rina::transport
