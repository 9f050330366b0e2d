// GPU buffers on a machine that may have no GPU: librina loads, host
// collectives work, and a stream call or a pointer that is not host memory
// gives rinaSystemError with a message, never a crash. Runs in every build.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "cuda/cuda_support.h"
#include "rank_harness.h"
#include "rina/rina.h"

namespace rina::testing {
namespace {

bool gpuUsable() { return cuda::usable(nullptr); }

// An address range that was mapped and is not any more (as a device pointer
// looks to the host).
void* unmappedRange(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  EXPECT_NE(p, MAP_FAILED);
  munmap(p, bytes);
  return p;
}

TEST(CudaAbsent, SharedLibraryLoadsAndAnswers) {
  void* lib = dlopen(RINA_LIBRARY_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  using GetVersion = rinaResult_t (*)(int*);
  auto getVersion = reinterpret_cast<GetVersion>(dlsym(lib, "rinaGetVersion"));
  ASSERT_NE(getVersion, nullptr);
  int v = 0;
  EXPECT_EQ(getVersion(&v), rinaSuccess);
  EXPECT_EQ(v, RINA_VERSION_CODE);
  EXPECT_NE(dlsym(lib, "rinaAllReduceStream"), nullptr);
  dlclose(lib);
}

TEST(CudaAbsent, MappedHostMemoryCheckAgreesWithMmap) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  char* p = static_cast<char*>(
      mmap(nullptr, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(p, MAP_FAILED);
  EXPECT_TRUE(cuda::isMappedHostMemory(p, 3 * page));
  EXPECT_TRUE(cuda::isMappedHostMemory(p + 10, page));
  munmap(p + 2 * page, page);  // the last page goes
  EXPECT_TRUE(cuda::isMappedHostMemory(p, 2 * page));
  EXPECT_FALSE(cuda::isMappedHostMemory(p + page, page + 1));
  EXPECT_FALSE(cuda::isMappedHostMemory(p + 2 * page, 8));
  munmap(p, 2 * page);
  EXPECT_FALSE(cuda::isMappedHostMemory(p, 1));
  std::vector<int> stackless(100);
  EXPECT_TRUE(cuda::isMappedHostMemory(stackless.data(), sizeof(int) * 100));
}

// The collectives' buffer check (isKnownHostMemory) asks the kernel once per
// buffer a thread passes, not once per call: a buffer seen mapped, or a
// part of it, is answered from memory; a range never seen mapped is still
// refused.
TEST(CudaAbsent, KnownHostBufferIsAskedOfTheKernelOnce) {
  std::vector<char> buf(10000);
  const uint64_t before = cuda::hostMemoryKernelChecksForTesting();
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(cuda::isKnownHostMemory(buf.data(), buf.size()));
  EXPECT_TRUE(cuda::isKnownHostMemory(buf.data() + 100, 50));
  EXPECT_EQ(cuda::hostMemoryKernelChecksForTesting() - before, 1u);
  EXPECT_FALSE(cuda::isKnownHostMemory(unmappedRange(8192), 8));
  EXPECT_EQ(cuda::hostMemoryKernelChecksForTesting() - before, 2u);
}

// A small allreduce after the first one makes no buffer check of its own
// that reaches the kernel, on any rank (a system call per buffer end was
// most of an 8-byte allreduce's time); results stay the serial sums.
TEST(CudaAbsent, RepeatedSmallAllReducesAskTheKernelNothing) {
  runThreads(2, [](int rank, rinaComm_t comm) {
    std::vector<int32_t> v(2);
    auto call = [&](int k) {
      v = {rank + k, 10 * rank};
      ASSERT_EQ(rinaAllReduce(v.data(), v.data(), v.size(), rinaInt32, rinaSum, comm), rinaSuccess);
      ASSERT_EQ(v[0], 1 + 2 * k);
      ASSERT_EQ(v[1], 10);
    };
    call(0);
    const uint64_t before = cuda::hostMemoryKernelChecksForTesting();
    for (int k = 1; k <= 50; ++k) call(k);
    EXPECT_EQ(cuda::hostMemoryKernelChecksForTesting() - before, 0u) << "rank " << rank;
  });
}

TEST(CudaAbsent, HostCollectivesStillWork) {
  runThreads(3, [](int rank, rinaComm_t comm) {
    std::vector<float> v(1000, static_cast<float>(rank + 1));
    ASSERT_EQ(rinaAllReduce(v.data(), v.data(), v.size(), rinaFloat32, rinaSum, comm), rinaSuccess);
    for (float x : v) ASSERT_EQ(x, 6.0f);
  });
}

TEST(CudaAbsent, ReasonIsNamedWhenNoGpu) {
  if (gpuUsable()) GTEST_SKIP() << "a GPU is usable here: the no-GPU path is not exercised";
  std::string why;
  EXPECT_FALSE(cuda::usable(&why));
  if (cuda::built()) {
    EXPECT_NE(why.find("cudaGetDeviceCount"), std::string::npos) << why;
  } else {
    EXPECT_EQ(why, "librina was built without CUDA");
  }
}

TEST(CudaAbsent, StreamCallWithoutGpuIsSystemErrorAndCommStaysUsable) {
  if (gpuUsable()) GTEST_SKIP() << "a GPU is usable here: the no-GPU path is not exercised";
  runThreads(2, [](int rank, rinaComm_t comm) {
    std::vector<int32_t> v(64, rank + 1);
    EXPECT_EQ(rinaAllReduceStream(v.data(), v.data(), v.size(), rinaInt32, rinaSum, comm, nullptr),
              rinaSystemError);
    std::string err = rinaCommGetLastError(comm);
    EXPECT_NE(err.find("no usable GPU"), std::string::npos) << err;
    EXPECT_NE(err.find("rank " + std::to_string(rank)), std::string::npos) << err;
    // Nothing was sent: the next collective works.
    ASSERT_EQ(rinaAllReduce(v.data(), v.data(), v.size(), rinaInt32, rinaSum, comm), rinaSuccess);
    EXPECT_EQ(v[0], 3);
  });
}

TEST(CudaAbsent, PointerThatIsNotHostMemoryIsSystemErrorForEveryCollective) {
  if (gpuUsable()) GTEST_SKIP() << "a GPU is usable here: the no-GPU path is not exercised";
  runThreads(1, [](int, rinaComm_t comm) {
    // Made after init: the communicator's own set-up (hwloc, sockets) maps
    // memory and could land in a hole made earlier.
    void* bogus = unmappedRange(1 << 16);
    std::vector<float> host(256, 1.0f);
    auto expectRefused = [&](rinaResult_t r, const char* which, const char* name) {
      EXPECT_EQ(r, rinaSystemError) << name;
      std::string err = rinaCommGetLastError(comm);
      EXPECT_NE(err.find(name), std::string::npos) << err;
      EXPECT_NE(err.find(std::string(which) + " "), std::string::npos) << err;
      EXPECT_NE(err.find("not mapped host memory"), std::string::npos) << err;
    };
    expectRefused(rinaAllReduce(bogus, host.data(), 256, rinaFloat32, rinaSum, comm), "sendbuff",
                  "rinaAllReduce");
    expectRefused(rinaAllReduce(host.data(), bogus, 256, rinaFloat32, rinaSum, comm), "recvbuff",
                  "rinaAllReduce");
    expectRefused(rinaReduceScatter(bogus, host.data(), 256, rinaFloat32, rinaSum, comm),
                  "sendbuff", "rinaReduceScatter");
    expectRefused(rinaAllGather(host.data(), bogus, 256, rinaFloat32, comm), "recvbuff",
                  "rinaAllGather");
    expectRefused(rinaBroadcast(bogus, bogus, 256, rinaFloat32, 0, comm), "sendbuff",
                  "rinaBroadcast");
    // The refusals are argument-level: the communicator still works.
    ASSERT_EQ(rinaAllReduce(host.data(), host.data(), 256, rinaFloat32, rinaSum, comm),
              rinaSuccess);
    EXPECT_EQ(host[0], 1.0f);
  });
}

}  // namespace
}  // namespace rina::testing
