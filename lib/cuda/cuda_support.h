// GPU buffers. Builds with CUDA link the static CUDA runtime, which opens
// the driver only when first used: librina loads, and host collectives work,
// on machines without a GPU or driver. Builds without CUDA compile
// cuda_stub.cc instead, with the same functions answering "not built".
//
// A collective's buffers are classified first (cudaPointerGetAttributes):
// device memory goes through pinned host buffers (runtime.cc; lib/api/call.cc
// decides when to stage); host, pinned and managed memory are used
// directly. When CUDA is unusable (no driver, no GPU), a pointer that is not
// mapped host memory is reported as a probable device pointer
// (rinaSystemError), never dereferenced.
#ifndef RINA_LIB_CUDA_CUDA_SUPPORT_H_
#define RINA_LIB_CUDA_CUDA_SUPPORT_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "core/status.h"
#include "rina/rina.h"

namespace rina::cuda {

// librina was built with CUDA.
bool built();
// A GPU is usable now; otherwise *why says why (asked once per process).
bool usable(std::string* why);

// The first and last page of p[0, bytes) are mapped in this process
// (mincore); what the no-GPU check relies on.
bool isMappedHostMemory(const void* p, size_t bytes);
// isMappedHostMemory, remembered per thread for the last few buffers found
// mapped (host_memory.cc says why that is sound): what every collective's
// buffer check uses, so a buffer passed again costs no system call.
bool isKnownHostMemory(const void* p, size_t bytes);
// How many times this thread asked the kernel (isMappedHostMemory).
uint64_t hostMemoryKernelChecksForTesting();

// *device = p[0, bytes) is GPU memory that the host cannot read. what names
// the argument in errors ("sendbuff").
Status isDevicePointer(const void* p, size_t bytes, const char* what, bool* device);

// dst[i] = a[i] OP b[i] on the GPU, stream-ordered (stream: cudaStream_t or
// NULL for the legacy default stream). Same semantics as the CPU kernels
// (reduce.h) bit for bit; avg sums (averageOnDevice divides).
Status reduceOnDevice(void* dst, const void* a, const void* b, size_t count, rinaDataType_t type,
                      rinaRedOp_t op, void* stream);
Status averageOnDevice(void* data, size_t count, rinaDataType_t type, int nranks, void* stream);

// Runs a host collective on staged copies of device buffers. Buffers that
// are host memory are passed through. Overlapping send/recv (in place) stay
// overlapping in the staged copy. Errors name rank; the copies of one call
// must be done within timeoutMs (the communicator's RINA_TIMEOUT_MS).
struct StagedBuffers {
  const void* send = nullptr;
  size_t sendBytes = 0;
  bool sendOnDevice = false;
  void* recv = nullptr;
  size_t recvBytes = 0;
  bool recvOnDevice = false;
};
using HostCollective = std::function<Status(const void* send, void* recv)>;
Status runStaged(const StagedBuffers& b, void* stream, int rank, int64_t timeoutMs,
                 const HostCollective& fn);

// An element-wise collective (allreduce) pipelined in chunks: the copy of
// chunk i+1 to the host overlaps the transport of chunk i, and chunk i's
// copy back overlaps chunk i+1's transport. Every rank must cut the same
// chunks (stageBytes, RINA_CUDA_STAGE_BYTES; same count and type): each
// chunk is one collective.
using HostChunk =
    std::function<Status(const void* send, void* recv, size_t firstElem, size_t count)>;
Status runStagedPipelined(const StagedBuffers& b, size_t count, size_t elemSize, size_t stageBytes,
                          void* stream, int rank, int64_t timeoutMs, const HostChunk& fn);

// The current device's PCI bus id as sysfs writes it ("0000:3b:00.0"), to
// pick the RDMA adapter nearest the GPU; false (and *why) without a usable GPU.
bool currentDeviceBusId(std::string* busId, std::string* why);

// GPUDirect RDMA by dmabuf (transport/verbs/gpu_direct.h). Whether the
// current device's memory can be exported as a dmabuf: the driver has
// cuMemGetHandleForAddressRange (CUDA 11.7) and the device sets
// CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED. The driver is reached through the
// runtime's entry-point query, so librina still does not link libcuda.
bool dmabufSupported(std::string* why);
// A dmabuf fd for the host-page-aligned range around p[0, bytes) of device
// memory, and p's offset into it. The caller closes *fd once registered.
Status dmabufOf(const void* p, size_t bytes, int* fd, uint64_t* offset);

// Waits (at most timeoutMs) for work queued on stream before a
// stream-ordered call (no-op when CUDA is unusable: the caller has failed
// already).
Status synchronizeStream(void* stream, int rank, int64_t timeoutMs);

}  // namespace rina::cuda

#endif  // RINA_LIB_CUDA_CUDA_SUPPORT_H_
