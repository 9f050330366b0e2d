// On a GPU: the device kernels against the serial reference for every type
// and op, and collectives on device buffers (out of place, in place, on a
// stream, mixed host/device) against a serial sum. Skipped, saying why,
// when no GPU is usable.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda/cuda_support.h"
#include "rank_harness.h"
#include "reduce_reference.h"
#include "rina/rina.h"

namespace rina::testing {
namespace {

#define SKIP_WITHOUT_GPU()                                               \
  do {                                                                   \
    std::string why_;                                                    \
    if (!cuda::usable(&why_)) GTEST_SKIP() << "no usable GPU: " << why_; \
  } while (0)

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

template <class T>
struct DeviceBuffer {
  explicit DeviceBuffer(size_t n) : count(n) {
    EXPECT_EQ(cudaMalloc(&ptr, n * sizeof(T) + 16), cudaSuccess);
  }
  ~DeviceBuffer() { cudaFree(ptr); }
  void upload(const std::vector<T>& v, size_t offsetBytes = 0) {
    EXPECT_EQ(cudaMemcpy(static_cast<char*>(ptr) + offsetBytes, v.data(), v.size() * sizeof(T),
                         cudaMemcpyHostToDevice),
              cudaSuccess);
  }
  std::vector<T> download(size_t n, size_t offsetBytes = 0) const {
    std::vector<T> v(n);
    EXPECT_EQ(cudaMemcpy(v.data(), static_cast<const char*>(ptr) + offsetBytes, n * sizeof(T),
                         cudaMemcpyDeviceToHost),
              cudaSuccess);
    return v;
  }
  void* at(size_t offsetBytes) { return static_cast<char*>(ptr) + offsetBytes; }
  void* ptr = nullptr;
  size_t count;
};

reduce::detail::KernelOp kernelOp(rinaRedOp_t op) {
  switch (op) {
    case rinaProd:
      return reduce::detail::kKernelProd;
    case rinaMin:
      return reduce::detail::kKernelMin;
    case rinaMax:
      return reduce::detail::kKernelMax;
    default:
      return reduce::detail::kKernelSum;
  }
}

// Every op, aligned (vector path) and misaligned by one element (scalar
// path), with a count that leaves a tail.
template <rinaDataType_t kType>
void checkKernels() {
  using Ref = reduce::reference::RefFor<kType>;
  using T = typename Ref::Storage;
  std::mt19937_64 rng(kType * 7919 + 1);
  const size_t n = 100003;
  std::vector<T> a(n), b(n);
  for (size_t i = 0; i < n; ++i) {
    a[i] = Ref::random(rng);
    b[i] = Ref::partner(rng, a[i]);
  }
  for (size_t shift : {size_t{0}, sizeof(T)}) {
    DeviceBuffer<T> da(n), db(n), dd(n);
    da.upload(a, shift);
    db.upload(b, shift);
    for (rinaRedOp_t op : {rinaSum, rinaProd, rinaMin, rinaMax}) {
      ASSERT_TRUE(
          cuda::reduceOnDevice(dd.at(shift), da.at(shift), db.at(shift), n, kType, op, nullptr)
              .ok());
      CUDA_OK(cudaDeviceSynchronize());
      std::vector<T> got = dd.download(n, shift);
      for (size_t i = 0; i < n; ++i) {
        T want = Ref::apply(kernelOp(op), a[i], b[i]);
        ASSERT_EQ(Ref::bits(got[i]), Ref::bits(want))
            << reduce::dataTypeName(kType) << " " << reduce::opName(op) << " element " << i
            << " shift " << shift;
      }
    }
    // In place (dst == a) gives the same as out of place.
    ASSERT_TRUE(
        cuda::reduceOnDevice(da.at(shift), da.at(shift), db.at(shift), n, kType, rinaSum, nullptr)
            .ok());
    std::vector<T> got = da.download(n, shift);
    for (size_t i = 0; i < n; i += 97) {
      ASSERT_EQ(Ref::bits(got[i]), Ref::bits(Ref::apply(reduce::detail::kKernelSum, a[i], b[i])));
    }
    // Average: divide once, as the CPU does.
    da.upload(a, shift);
    ASSERT_TRUE(cuda::averageOnDevice(da.at(shift), n, kType, 3, nullptr).ok());
    got = da.download(n, shift);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(Ref::bits(got[i]), Ref::bits(Ref::average(a[i], 3)))
          << reduce::dataTypeName(kType) << " avg element " << i;
    }
  }
}

TEST(CudaKernels, Int8) {
  SKIP_WITHOUT_GPU();
  checkKernels<rinaInt8>();
}
TEST(CudaKernels, Uint8) {
  SKIP_WITHOUT_GPU();
  checkKernels<rinaUint8>();
}
TEST(CudaKernels, Int32) {
  SKIP_WITHOUT_GPU();
  checkKernels<rinaInt32>();
}
TEST(CudaKernels, Uint32) {
  SKIP_WITHOUT_GPU();
  checkKernels<rinaUint32>();
}
TEST(CudaKernels, Int64) {
  SKIP_WITHOUT_GPU();
  checkKernels<rinaInt64>();
}
TEST(CudaKernels, Uint64) {
  SKIP_WITHOUT_GPU();
  checkKernels<rinaUint64>();
}
TEST(CudaKernels, Float16) {
  SKIP_WITHOUT_GPU();
  checkKernels<rinaFloat16>();
}
// The device converts float16 with the hardware's instructions (NaNs aside):
// every one of the 65536 bit patterns (subnormals, the largest numbers,
// infinities, NaNs) against a partner that walks them all in another order,
// each op, against the reference bit for bit.
TEST(CudaKernels, Float16EveryBitPattern) {
  SKIP_WITHOUT_GPU();
  using Ref = reduce::reference::RefFor<rinaFloat16>;
  using T = Ref::Storage;
  const size_t n = 65536;
  std::vector<T> a(n), b(n);
  for (size_t i = 0; i < n; ++i) {
    a[i] = std::bit_cast<T>(static_cast<uint16_t>(i));
    b[i] = std::bit_cast<T>(static_cast<uint16_t>(i * 40503u));  // odd: a permutation
  }
  DeviceBuffer<T> da(n), db(n), dd(n);
  da.upload(a);
  db.upload(b);
  for (rinaRedOp_t op : {rinaSum, rinaProd, rinaMin, rinaMax}) {
    ASSERT_TRUE(cuda::reduceOnDevice(dd.ptr, da.ptr, db.ptr, n, rinaFloat16, op, nullptr).ok());
    CUDA_OK(cudaDeviceSynchronize());
    std::vector<T> got = dd.download(n);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(Ref::bits(got[i]), Ref::bits(Ref::apply(kernelOp(op), a[i], b[i])))
          << reduce::opName(op) << " of bits " << i << " and " << ((i * 40503u) & 0xffffu);
    }
  }
}
TEST(CudaKernels, Bfloat16) {
  SKIP_WITHOUT_GPU();
  checkKernels<rinaBfloat16>();
}
TEST(CudaKernels, Float32) {
  SKIP_WITHOUT_GPU();
  checkKernels<rinaFloat32>();
}
TEST(CudaKernels, Float64) {
  SKIP_WITHOUT_GPU();
  checkKernels<rinaFloat64>();
}

TEST(CudaKernels, InvalidTypeIsRefused) {
  SKIP_WITHOUT_GPU();
  EXPECT_EQ(
      cuda::reduceOnDevice(nullptr, nullptr, nullptr, 4, rinaNumTypes, rinaSum, nullptr).code(),
      rinaInvalidArgument);
}

// Integer inputs make the expected sums exact whatever the order.
std::vector<float> rankInput(int rank, size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<float>((i * 7 + static_cast<size_t>(rank) * 13) % 1000);
  return v;
}

float expectedSum(int nranks, size_t i) {
  float s = 0;
  for (int r = 0; r < nranks; ++r)
    s += static_cast<float>((i * 7 + static_cast<size_t>(r) * 13) % 1000);
  return s;
}

enum class Mode { kOutOfPlace, kInPlace, kStream, kHostSendDeviceRecv };

void deviceAllReduce(Mode mode) {
  // Several staging chunks, with a short last one.
  ScopedEnv chunk("RINA_CUDA_STAGE_BYTES", "64K");
  const int nranks = 3;
  const size_t n = 3 * 16384 + 1001;
  runThreads(nranks, [&](int rank, rinaComm_t comm) {
    DeviceBuffer<float> send(n), recv(n);
    std::vector<float> in = rankInput(rank, n);
    send.upload(in);
    rinaResult_t r = rinaSuccess;
    cudaStream_t stream = nullptr;
    switch (mode) {
      case Mode::kOutOfPlace:
        r = rinaAllReduce(send.ptr, recv.ptr, n, rinaFloat32, rinaSum, comm);
        break;
      case Mode::kInPlace:
        r = rinaAllReduce(send.ptr, send.ptr, n, rinaFloat32, rinaSum, comm);
        break;
      case Mode::kStream:
        ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
        // Queued work the call must wait for: overwrite send on the stream.
        ASSERT_EQ(cudaMemsetAsync(send.ptr, 0, n * sizeof(float), stream), cudaSuccess);
        ASSERT_EQ(
            cudaMemcpyAsync(send.ptr, in.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream),
            cudaSuccess);
        r = rinaAllReduceStream(send.ptr, recv.ptr, n, rinaFloat32, rinaSum, comm, stream);
        break;
      case Mode::kHostSendDeviceRecv:
        r = rinaAllReduce(in.data(), recv.ptr, n, rinaFloat32, rinaSum, comm);
        break;
    }
    ASSERT_EQ(r, rinaSuccess) << rinaCommGetLastError(comm);
    DeviceBuffer<float> after(n);
    if (stream) {
      // Work queued after the call sees its result: a copy of recv on the
      // same stream.
      ASSERT_EQ(
          cudaMemcpyAsync(after.ptr, recv.ptr, n * sizeof(float), cudaMemcpyDeviceToDevice, stream),
          cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
      cudaStreamDestroy(stream);
      std::vector<float> copied = after.download(n);
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(copied[i], expectedSum(nranks, i)) << "queued after the call: element " << i;
      }
    }
    std::vector<float> out = (mode == Mode::kInPlace ? send : recv).download(n);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], expectedSum(nranks, i)) << "element " << i;
  });
}

TEST(CudaCollectives, DeviceAllReduce) {
  SKIP_WITHOUT_GPU();
  deviceAllReduce(Mode::kOutOfPlace);
}
TEST(CudaCollectives, DeviceAllReduceInPlace) {
  SKIP_WITHOUT_GPU();
  deviceAllReduce(Mode::kInPlace);
}
TEST(CudaCollectives, DeviceAllReduceOnStream) {
  SKIP_WITHOUT_GPU();
  deviceAllReduce(Mode::kStream);
}
TEST(CudaCollectives, HostSendDeviceRecv) {
  SKIP_WITHOUT_GPU();
  deviceAllReduce(Mode::kHostSendDeviceRecv);
}

TEST(CudaCollectives, DeviceReduceScatterAllGatherBroadcast) {
  SKIP_WITHOUT_GPU();
  const int nranks = 2;
  const size_t block = 4097;
  runThreads(nranks, [&](int rank, rinaComm_t comm) {
    DeviceBuffer<float> all(block * nranks), part(block);
    std::vector<float> in = rankInput(rank, block * nranks);
    all.upload(in);
    ASSERT_EQ(rinaReduceScatter(all.ptr, part.ptr, block, rinaFloat32, rinaSum, comm), rinaSuccess)
        << rinaCommGetLastError(comm);
    std::vector<float> got = part.download(block);
    for (size_t i = 0; i < block; ++i) {
      ASSERT_EQ(got[i], expectedSum(nranks, static_cast<size_t>(rank) * block + i));
    }
    // AllGather in place: each rank's block already sits at its offset.
    all.upload(got, static_cast<size_t>(rank) * block * sizeof(float));
    ASSERT_EQ(rinaAllGather(all.at(static_cast<size_t>(rank) * block * sizeof(float)), all.ptr,
                            block, rinaFloat32, comm),
              rinaSuccess)
        << rinaCommGetLastError(comm);
    std::vector<float> full = all.download(block * nranks);
    for (size_t i = 0; i < full.size(); ++i) ASSERT_EQ(full[i], expectedSum(nranks, i));
    std::vector<float> mine(block, static_cast<float>(rank + 10));
    part.upload(mine);
    ASSERT_EQ(rinaBroadcast(part.ptr, part.ptr, block, rinaFloat32, 1, comm), rinaSuccess);
    for (float x : part.download(block)) ASSERT_EQ(x, 11.0f);
  });
}

}  // namespace
}  // namespace rina::testing
