// GPUDirect RDMA on hardware: GPU memory registered with the RDMA adapter
// through a dmabuf. Needs a GPU whose driver exports dmabuf and an RDMA
// adapter; skips naming what is missing (as everywhere without them).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "core/config.h"
#include "cuda/cuda_support.h"
#include "transport/verbs/gpu_direct.h"
#include "transport/verbs/select.h"
#include "transport/verbs/verbs_context.h"

namespace rina::transport::verbs {
namespace {

TEST(GpuDirectHardware, RegistersGpuMemoryThroughDmabuf) {
  TransportChoice choice;
  ASSERT_TRUE(chooseTransport(probeDevices(), config::environment().ibHca, false, &choice).ok());
  GdrProbe p;
  p.verbsDmabuf = verbsHasDmabuf();
  p.rdmaDevice = choice.useVerbs;
  p.rdmaWhy = choice.why;
  if (p.rdmaDevice) p.gpu = cuda::usable(&p.gpuWhy);
  if (p.gpu) p.gpuDmabuf = cuda::dmabufSupported(&p.gpuDmabufWhy);
  GdrChoice gdr;
  ASSERT_TRUE(chooseGdr(GdrMode::kAuto, p, &gdr).ok());
  if (!gdr.dmabuf) GTEST_SKIP() << gdr.why;

  VerbsOptions vo;
  vo.gidIndex = static_cast<int>(config::environment().ibGidIndex);
  VerbsContextPtr ctx;
  Status s = openVerbsContext(choice, vo, &ctx);
  ASSERT_TRUE(s.ok()) << s.message();
  void* dev = nullptr;
  ASSERT_EQ(cudaMalloc(&dev, 4 << 20), cudaSuccess);
  // Not page-aligned on purpose: the exported range is rounded, the MR is not.
  MrKeys keys;
  s = registerGpuMemory(ctx, static_cast<char*>(dev) + 4096 + 64, 1 << 20, &keys);
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_NE(keys.handle, 0u);
  deregisterMemory(keys);
  // Host memory is no dmabuf: the driver refuses it, with a message.
  std::vector<char> host(1 << 16);
  s = registerGpuMemory(ctx, host.data(), host.size(), &keys);
  EXPECT_EQ(s.code(), rinaSystemError);
  EXPECT_NE(s.message().find("cuMemGetHandleForAddressRange"), std::string::npos) << s.message();
  cudaFree(dev);
}

}  // namespace
}  // namespace rina::transport::verbs
