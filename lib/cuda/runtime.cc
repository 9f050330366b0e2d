// The CUDA runtime side of GPU buffers: probing, pointer classification, and
// staging through pinned host memory on two copy streams.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "core/log.h"
#include "core/socket.h"
#include "cuda/cuda_support.h"

namespace rina::cuda {
namespace {

struct Probe {
  bool ok = false;
  std::string why;
};

const Probe& probe() {
  static const Probe p = [] {
    Probe r;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
      r.why =
          std::string("cudaGetDeviceCount: ") + cudaGetErrorName(e) + ", " + cudaGetErrorString(e);
      (void)cudaGetLastError();
    } else if (n == 0) {
      r.why = "no CUDA device";
    } else {
      r.ok = true;
    }
    RINA_INFO("CUDA: %s", r.ok ? "GPU usable" : r.why.c_str());
    return r;
  }();
  return p;
}

Status cudaFail(cudaError_t e, int rank, const char* what) {
  return errorf(rinaSystemError, "rank %d: %s: %s (%s)", rank, what, cudaGetErrorName(e),
                cudaGetErrorString(e));
}

#define RINA_CUDA_TRY(call, rank, what)                               \
  do {                                                                \
    cudaError_t rina_e_ = (call);                                     \
    if (rina_e_ != cudaSuccess) return cudaFail(rina_e_, rank, what); \
  } while (0)

// Every wait polls with a deadline (RINA_TIMEOUT_MS), never blocks forever.
Status waitEvent(cudaEvent_t ev, Deadline deadline, int rank, const char* what, size_t chunk) {
  for (;;) {
    cudaError_t e = cudaEventQuery(ev);
    if (e == cudaSuccess) return {};
    if (e != cudaErrorNotReady) return cudaFail(e, rank, what);
    if (Clock::now() >= deadline) {
      return errorf(rinaTimeout, "rank %d: %s of chunk %zu not finished within RINA_TIMEOUT_MS",
                    rank, what, chunk);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

constexpr int kSlots = 3;

// Per thread (a communicator is used by one thread at a time): copy streams,
// events and a pinned arena, created on first use and grown as needed.
struct Staging {
  int device = -1;
  cudaStream_t in = nullptr, out = nullptr;
  cudaEvent_t evIn[kSlots] = {}, evOut[kSlots] = {}, evUser = nullptr, evDone = nullptr;
  char* host = nullptr;
  size_t hostBytes = 0;

  ~Staging() { reset(); }
  void reset() {
    if (host) cudaFreeHost(host);
    for (cudaEvent_t& e : evIn)
      if (e) cudaEventDestroy(e), e = nullptr;
    for (cudaEvent_t& e : evOut)
      if (e) cudaEventDestroy(e), e = nullptr;
    if (evUser) cudaEventDestroy(evUser);
    if (evDone) cudaEventDestroy(evDone);
    if (in) cudaStreamDestroy(in);
    if (out) cudaStreamDestroy(out);
    host = nullptr;
    hostBytes = 0;
    evUser = evDone = nullptr;
    in = out = nullptr;
    device = -1;
  }

  Status prepare(size_t bytes, int rank) {
    int dev = 0;
    RINA_CUDA_TRY(cudaGetDevice(&dev), rank, "cudaGetDevice");
    if (dev != device) {
      reset();
      device = dev;
      RINA_CUDA_TRY(cudaStreamCreateWithFlags(&in, cudaStreamNonBlocking), rank,
                    "cudaStreamCreate");
      RINA_CUDA_TRY(cudaStreamCreateWithFlags(&out, cudaStreamNonBlocking), rank,
                    "cudaStreamCreate");
      for (int i = 0; i < kSlots; ++i) {
        RINA_CUDA_TRY(cudaEventCreateWithFlags(&evIn[i], cudaEventDisableTiming), rank,
                      "cudaEventCreate");
        RINA_CUDA_TRY(cudaEventCreateWithFlags(&evOut[i], cudaEventDisableTiming), rank,
                      "cudaEventCreate");
      }
      RINA_CUDA_TRY(cudaEventCreateWithFlags(&evUser, cudaEventDisableTiming), rank,
                    "cudaEventCreate");
      RINA_CUDA_TRY(cudaEventCreateWithFlags(&evDone, cudaEventDisableTiming), rank,
                    "cudaEventCreate");
    }
    if (bytes > hostBytes) {
      if (host) cudaFreeHost(host);
      host = nullptr;
      hostBytes = 0;
      void* p = nullptr;
      RINA_CUDA_TRY(cudaMallocHost(&p, bytes), rank, "cudaMallocHost (pinned staging buffer)");
      host = static_cast<char*>(p);
      hostBytes = bytes;
    }
    return {};
  }

  // Copies on `in` start after the work already queued on the user's stream.
  Status orderAfter(void* stream, int rank) {
    auto user = static_cast<cudaStream_t>(stream);
    RINA_CUDA_TRY(cudaEventRecord(evUser, user), rank, "cudaEventRecord on the caller's stream");
    RINA_CUDA_TRY(cudaStreamWaitEvent(in, evUser, 0), rank, "cudaStreamWaitEvent");
    return {};
  }

  // Later work on the user's stream starts after our copies back.
  Status orderBefore(void* stream, int rank, Deadline deadline) {
    RINA_CUDA_TRY(cudaEventRecord(evDone, out), rank, "cudaEventRecord");
    RINA_TRY(waitEvent(evDone, deadline, rank, "copy to the GPU", 0));
    RINA_CUDA_TRY(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), evDone, 0), rank,
                  "cudaStreamWaitEvent on the caller's stream");
    return {};
  }

  // After a failure: let queued copies finish before the arena is reused.
  void drain(int rank, int64_t timeoutMs) {
    Deadline d = deadlineAfterMs(timeoutMs);
    for (cudaStream_t s : {in, out}) {
      if (cudaEventRecord(evDone, s) == cudaSuccess) (void)waitEvent(evDone, d, rank, "drain", 0);
    }
  }
};

thread_local Staging tlsStaging;

// Whole elements of at most stageBytes (RINA_CUDA_STAGE_BYTES, checked to be
// 4K to 1G), at least one.
size_t stageChunkBytes(size_t elemSize, size_t stageBytes) {
  return std::max(elemSize, stageBytes / elemSize * elemSize);
}

}  // namespace

bool built() { return true; }

bool usable(std::string* why) {
  const Probe& p = probe();
  if (why) *why = p.why;
  return p.ok;
}

Status isDevicePointer(const void* p, size_t bytes, const char* what, bool* device) {
  *device = false;
  // A range found mapped host memory before is no device memory (the
  // device's addresses are never host-mapped): no CUDA call for it.
  if (bytes == 0 || isRememberedHostMemory(p, bytes)) return {};
  const Probe& pr = probe();
  cudaPointerAttributes a{};
  if (pr.ok && cudaPointerGetAttributes(&a, p) == cudaSuccess) {
    // Managed and pinned host memory are readable by the host: no staging.
    *device = a.type == cudaMemoryTypeDevice;
    if (a.type != cudaMemoryTypeUnregistered || isKnownHostMemory(p, bytes)) return {};
    return errorf(rinaSystemError, "%s %p is neither host memory nor known to CUDA", what, p);
  }
  if (pr.ok) (void)cudaGetLastError();  // clears the failed lookup's error
  if (isKnownHostMemory(p, bytes)) return {};
  return errorf(rinaSystemError, "%s %p is not mapped host memory (a GPU pointer?) and %s", what, p,
                pr.ok ? "CUDA does not know it" : ("no GPU is usable: " + pr.why).c_str());
}

Status synchronizeStream(void* stream, int rank, int64_t timeoutMs) {
  std::string why;
  if (!usable(&why))
    return errorf(rinaSystemError, "rank %d: no usable GPU (%s)", rank, why.c_str());
  Staging& st = tlsStaging;
  RINA_TRY(st.prepare(0, rank));
  RINA_CUDA_TRY(cudaEventRecord(st.evUser, static_cast<cudaStream_t>(stream)), rank,
                "cudaEventRecord on the caller's stream");
  return waitEvent(st.evUser, deadlineAfterMs(timeoutMs), rank,
                   "work queued on the caller's stream", 0);
}

Status runStaged(const StagedBuffers& b, void* stream, int rank, int64_t timeoutMs,
                 const HostCollective& fn) {
  Staging& st = tlsStaging;
  const auto s0 = reinterpret_cast<uintptr_t>(b.send), r0 = reinterpret_cast<uintptr_t>(b.recv);
  const bool overlap = s0 < r0 + b.recvBytes && r0 < s0 + b.sendBytes;
  const uintptr_t lo = std::min(s0, r0), hi = std::max(s0 + b.sendBytes, r0 + b.recvBytes);
  const size_t sendArea = (b.sendOnDevice ? (b.sendBytes + 255) / 256 * 256 : 0);
  const size_t need = overlap ? hi - lo : sendArea + (b.recvOnDevice ? b.recvBytes : 0);
  RINA_TRY(st.prepare(std::max<size_t>(need, 1), rank));
  const void* hs = b.send;
  void* hr = b.recv;
  if (overlap) {
    hs = st.host + (s0 - lo);
    hr = st.host + (r0 - lo);
  } else {
    if (b.sendOnDevice) hs = st.host;
    if (b.recvOnDevice) hr = st.host + sendArea;
  }
  Deadline deadline = deadlineAfterMs(timeoutMs);
  RINA_TRY(st.orderAfter(stream, rank));
  if (b.sendOnDevice) {
    RINA_CUDA_TRY(
        cudaMemcpyAsync(const_cast<void*>(hs), b.send, b.sendBytes, cudaMemcpyDeviceToHost, st.in),
        rank, "copy of sendbuff to the host");
    RINA_CUDA_TRY(cudaEventRecord(st.evIn[0], st.in), rank, "cudaEventRecord");
    RINA_TRY(waitEvent(st.evIn[0], deadline, rank, "copy of sendbuff to the host", 0));
  }
  Status s = fn(hs, hr);
  if (!s.ok()) return s;
  if (b.recvOnDevice) {
    RINA_CUDA_TRY(cudaMemcpyAsync(b.recv, hr, b.recvBytes, cudaMemcpyHostToDevice, st.out), rank,
                  "copy of recvbuff to the GPU");
  }
  return st.orderBefore(stream, rank, deadline);
}

Status runStagedPipelined(const StagedBuffers& b, size_t count, size_t elemSize, size_t stageBytes,
                          void* stream, int rank, int64_t timeoutMs, const HostChunk& fn) {
  Staging& st = tlsStaging;
  const size_t chunkBytes = stageChunkBytes(elemSize, stageBytes);
  const size_t chunkElems = chunkBytes / elemSize;
  const size_t nchunks = (count + chunkElems - 1) / chunkElems;
  RINA_TRY(st.prepare(kSlots * chunkBytes, rank));
  Deadline deadline = deadlineAfterMs(timeoutMs);
  auto slot = [&](size_t i) { return st.host + (i % kSlots) * chunkBytes; };
  auto elems = [&](size_t i) { return std::min(chunkElems, count - i * chunkElems); };
  auto issueIn = [&](size_t i) -> Status {
    if (!b.sendOnDevice) return {};
    RINA_CUDA_TRY(cudaMemcpyAsync(slot(i), static_cast<const char*>(b.send) + i * chunkBytes,
                                  elems(i) * elemSize, cudaMemcpyDeviceToHost, st.in),
                  rank, "copy of a sendbuff chunk to the host");
    RINA_CUDA_TRY(cudaEventRecord(st.evIn[i % kSlots], st.in), rank, "cudaEventRecord");
    return {};
  };
  auto body = [&]() -> Status {
    RINA_TRY(st.orderAfter(stream, rank));
    RINA_TRY(issueIn(0));
    for (size_t i = 0; i < nchunks; ++i) {
      if (i + 1 < nchunks) {
        // The slot of chunk i+1 last held chunk i+1-kSlots: its copy back must be done.
        if (i + 1 >= kSlots && b.recvOnDevice) {
          RINA_TRY(waitEvent(st.evOut[(i + 1) % kSlots], deadline, rank, "copy to the GPU",
                             i + 1 - kSlots));
        }
        RINA_TRY(issueIn(i + 1));
      }
      if (b.sendOnDevice) {
        RINA_TRY(waitEvent(st.evIn[i % kSlots], deadline, rank, "copy to the host", i));
      }
      const size_t off = i * chunkBytes;
      const void* hs = b.sendOnDevice ? slot(i) : static_cast<const char*>(b.send) + off;
      void* hr = b.recvOnDevice ? slot(i) : static_cast<char*>(b.recv) + off;
      RINA_TRY(fn(hs, hr, i * chunkElems, elems(i)));
      if (b.recvOnDevice) {
        RINA_CUDA_TRY(cudaMemcpyAsync(static_cast<char*>(b.recv) + off, slot(i),
                                      elems(i) * elemSize, cudaMemcpyHostToDevice, st.out),
                      rank, "copy of a recvbuff chunk to the GPU");
        RINA_CUDA_TRY(cudaEventRecord(st.evOut[i % kSlots], st.out), rank, "cudaEventRecord");
      }
    }
    return st.orderBefore(stream, rank, deadline);
  };
  Status s = body();
  if (!s.ok()) st.drain(rank, timeoutMs);
  return s;
}

}  // namespace rina::cuda
