// Copying straight out of a peer process's memory (cross-memory attach,
// process_vm_readv): a block between two ranks of one host then moves in one
// copy instead of two (into and out of a FIFO). The peer names the address;
// the reader checks nothing beyond what the kernel checks, so it is used
// only on connections whose peer is a rank of the same communicator on
// this host (Connection::sharedHostPid).
#ifndef RINA_LIB_TRANSPORT_CMA_H_
#define RINA_LIB_TRANSPORT_CMA_H_

#include <cstddef>
#include <cstdint>

#include "core/status.h"

namespace rina::transport {

// Copies len bytes at address `from` in process pid into dst. An error
// (rinaSystemError) names the pid and errno; a kernel or container that
// forbids it (EPERM, ENOSYS) is reported the same way, and callers fall back
// to streaming.
Status readProcessMemory(int pid, uint64_t from, void* dst, size_t len);

}  // namespace rina::transport

#endif  // RINA_LIB_TRANSPORT_CMA_H_
