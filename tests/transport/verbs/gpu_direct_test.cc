// GPUDirect RDMA (dmabuf) decisions for every case, without a GPU or an
// adapter: the knob, what each missing piece makes of auto and of 1, and a
// registration refused at run time.
#include "transport/verbs/gpu_direct.h"

#include <gtest/gtest.h>

namespace rina::transport::verbs {
namespace {

GdrProbe everything() {
  GdrProbe p;
  p.verbsDmabuf = true;
  p.rdmaDevice = true;
  p.gpu = true;
  p.gpuDmabuf = true;
  return p;
}

TEST(GpuDirect, KnobValues) {
  GdrMode m;
  ASSERT_TRUE(parseGdrMode("auto", &m).ok());
  EXPECT_EQ(m, GdrMode::kAuto);
  ASSERT_TRUE(parseGdrMode("0", &m).ok());
  EXPECT_EQ(m, GdrMode::kOff);
  ASSERT_TRUE(parseGdrMode("1", &m).ok());
  EXPECT_EQ(m, GdrMode::kOn);
  for (const char* bad : {"", "on", "yes", "2", "auto "}) {
    Status s = parseGdrMode(bad, &m);
    EXPECT_EQ(s.code(), rinaInvalidArgument) << bad;
    EXPECT_EQ(s.message(), std::string("RINA_IB_GDR=") + bad + ": give auto, 0 or 1");
  }
}

TEST(GpuDirect, DmabufWhenEveryPieceIsThere) {
  GdrChoice c;
  for (GdrMode m : {GdrMode::kAuto, GdrMode::kOn}) {
    ASSERT_TRUE(chooseGdr(m, everything(), &c).ok());
    EXPECT_TRUE(c.dmabuf);
    EXPECT_EQ(c.why, "GPUDirect RDMA: GPU memory registered through dmabuf");
  }
  ASSERT_TRUE(chooseGdr(GdrMode::kOff, everything(), &c).ok());
  EXPECT_FALSE(c.dmabuf);
  EXPECT_EQ(c.why, "GPU buffers staged through host memory (RINA_IB_GDR=0)");
}

// Each missing piece, first one wins: auto stages and says why, 1 fails with it.
TEST(GpuDirect, EachMissingPieceStagesUnderAutoAndFailsUnderOne) {
  struct Case {
    void (*clear)(GdrProbe&);
    const char* reason;
  } cases[] = {
      {[](GdrProbe& p) {
         p.rdmaDevice = false;
         p.rdmaWhy = "no RDMA device (ibv_get_device_list: Function not implemented)";
       },
       "no RDMA device (ibv_get_device_list: Function not implemented)"},
      {[](GdrProbe& p) { p.verbsDmabuf = false; },
       "librina's libibverbs has no ibv_reg_dmabuf_mr (rdma-core 34 or newer has it)"},
      {[](GdrProbe& p) {
         p.gpu = false;
         p.gpuWhy =
             "cudaGetDeviceCount: cudaErrorInsufficientDriver, CUDA driver version is "
             "insufficient for CUDA runtime version";
       },
       "cudaGetDeviceCount: cudaErrorInsufficientDriver"},
      {[](GdrProbe& p) {
         p.gpuDmabuf = false;
         p.gpuDmabufWhy = "GPU 0 does not export memory as dmabuf";
       },
       "GPU 0 does not export memory as dmabuf"},
      {[](GdrProbe& p) {
         p.gpuDmabuf = false;
         p.gpuDmabufWhy.clear();
       },
       "the GPU driver exports no dmabuf"},
  };
  for (const Case& k : cases) {
    GdrProbe p = everything();
    k.clear(p);
    GdrChoice c;
    ASSERT_TRUE(chooseGdr(GdrMode::kAuto, p, &c).ok());
    EXPECT_FALSE(c.dmabuf) << k.reason;
    EXPECT_EQ(c.why.rfind("GPU buffers staged through host memory: ", 0), 0u) << c.why;
    EXPECT_NE(c.why.find(k.reason), std::string::npos) << c.why;
    Status s = chooseGdr(GdrMode::kOn, p, &c);
    EXPECT_EQ(s.code(), rinaSystemError);
    EXPECT_EQ(
        s.message().rfind("RINA_IB_GDR=1: cannot register GPU memory with the RDMA adapter: ", 0),
        0u)
        << s.message();
    EXPECT_NE(s.message().find(k.reason), std::string::npos) << s.message();
  }
  // Two pieces missing: the adapter is named first.
  GdrProbe p;
  GdrChoice c;
  ASSERT_TRUE(chooseGdr(GdrMode::kAuto, p, &c).ok());
  EXPECT_EQ(c.why, "GPU buffers staged through host memory: no RDMA device");
}

TEST(GpuDirect, ARefusedRegistrationStagesUnderAutoAndFailsUnderOne) {
  const Status refused =
      errorf(rinaSystemError, "ibv_reg_dmabuf_mr of 4096 bytes: Operation not supported");
  GdrChoice c;
  ASSERT_TRUE(chooseGdr(GdrMode::kAuto, everything(), &c).ok());
  ASSERT_TRUE(onDmabufFailure(GdrMode::kAuto, refused, &c).ok());
  EXPECT_FALSE(c.dmabuf);
  EXPECT_EQ(c.why,
            "GPU buffers staged through host memory: dmabuf registration failed (ibv_reg_dmabuf_mr "
            "of 4096 bytes: Operation not supported)");
  ASSERT_TRUE(chooseGdr(GdrMode::kOn, everything(), &c).ok());
  Status s = onDmabufFailure(GdrMode::kOn, refused, &c);
  EXPECT_EQ(s.code(), rinaSystemError);
  EXPECT_EQ(s.message(), "RINA_IB_GDR=1: ibv_reg_dmabuf_mr of 4096 bytes: Operation not supported");
}

}  // namespace
}  // namespace rina::transport::verbs
