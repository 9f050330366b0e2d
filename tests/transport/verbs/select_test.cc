// Transport selection for every case, the HCA knob's syntax, the completion
// status table, and the connection-info record.
#include "transport/verbs/select.h"

#include <gtest/gtest.h>

#include <cerrno>

#include "transport/verbs/qp_info.h"
#include "transport/verbs/wc_status.h"

#ifdef RINA_TEST_HAVE_VERBS
#include <infiniband/verbs.h>
#endif

namespace rina::transport::verbs {
namespace {

DeviceProbe devices(std::vector<std::string> names) {
  DeviceProbe p;
  p.built = true;
  p.listOk = true;
  p.names = std::move(names);
  return p;
}

TEST(VerbsSelect, NoDeviceListFallsBackWithTheReason) {
  DeviceProbe p;  // as on this machine: NULL with ENOSYS
  p.built = true;
  p.listOk = false;
  p.listErrno = ENOSYS;
  TransportChoice c;
  ASSERT_TRUE(chooseTransport(p, "", false, &c).ok());
  EXPECT_FALSE(c.useVerbs);
  EXPECT_EQ(c.why, "no RDMA device (ibv_get_device_list: Function not implemented), using sockets");
}

TEST(VerbsSelect, EmptyListFallsBack) {
  TransportChoice c;
  ASSERT_TRUE(chooseTransport(devices({}), "", false, &c).ok());
  EXPECT_FALSE(c.useVerbs);
  EXPECT_NE(c.why.find("found none"), std::string::npos);
}

TEST(VerbsSelect, NotBuiltOrDisabledUsesSockets) {
  DeviceProbe p = devices({"mlx5_0"});
  TransportChoice c;
  ASSERT_TRUE(chooseTransport(p, "", true, &c).ok());
  EXPECT_FALSE(c.useVerbs);
  EXPECT_NE(c.why.find("RINA_IB_DISABLE"), std::string::npos);
  p.built = false;
  ASSERT_TRUE(chooseTransport(p, "", false, &c).ok());
  EXPECT_FALSE(c.useVerbs);
  EXPECT_NE(c.why.find("without libibverbs"), std::string::npos);
  // Asking for an adapter from a build without verbs is an error, not TCP.
  Status s = chooseTransport(p, "mlx5_0", false, &c);
  EXPECT_EQ(s.code(), rinaSystemError);
  EXPECT_NE(s.message().find("RINA_IB_HCA=mlx5_0: no such RDMA device (librina was built without "
                             "libibverbs)"),
            std::string::npos)
      << s.message();
}

TEST(VerbsSelect, FirstDeviceByDefaultOrTheNamedOne) {
  TransportChoice c;
  ASSERT_TRUE(chooseTransport(devices({"mlx5_0", "mlx5_1"}), "", false, &c).ok());
  EXPECT_TRUE(c.useVerbs);
  EXPECT_EQ(c.device, "mlx5_0");
  EXPECT_EQ(c.port, 1);
  ASSERT_TRUE(chooseTransport(devices({"mlx5_0", "mlx5_1"}), "mlx5_1:2", false, &c).ok());
  EXPECT_TRUE(c.useVerbs);
  EXPECT_EQ(c.device, "mlx5_1");
  EXPECT_EQ(c.port, 2);
}

TEST(VerbsSelect, NamedDeviceMissingIsAnErrorListingWhatExists) {
  TransportChoice c;
  Status s = chooseTransport(devices({"mlx5_0", "mlx5_1"}), "mlx5_7", false, &c);
  EXPECT_EQ(s.code(), rinaSystemError);
  EXPECT_NE(s.message().find("RINA_IB_HCA=mlx5_7: no such RDMA device (devices: mlx5_0, mlx5_1)"),
            std::string::npos)
      << s.message();
  DeviceProbe none;
  none.built = true;
  none.listErrno = ENOSYS;
  s = chooseTransport(none, "mlx5_0", false, &c);
  EXPECT_EQ(s.code(), rinaSystemError);
  EXPECT_NE(s.message().find("Function not implemented"), std::string::npos) << s.message();
  // Disabled wins over a named device: RINA_IB_DISABLE is the documented way out.
  EXPECT_TRUE(chooseTransport(none, "mlx5_0", true, &c).ok());
  EXPECT_FALSE(c.useVerbs);
}

TEST(VerbsSelect, HcaSpecSyntax) {
  HcaSpec h;
  ASSERT_TRUE(parseHcaSpec("", &h).ok());
  EXPECT_EQ(h.name, "");
  ASSERT_TRUE(parseHcaSpec("bnxt_re0", &h).ok());
  EXPECT_EQ(h.name, "bnxt_re0");
  EXPECT_EQ(h.port, 1);
  ASSERT_TRUE(parseHcaSpec("mlx5_0:255", &h).ok());
  EXPECT_EQ(h.port, 255);
  for (const char* bad : {"mlx5_0:", "mlx5_0:0", "mlx5_0:256", "mlx5_0:x", ":1", "mlx5_0:1:2"}) {
    Status s = parseHcaSpec(bad, &h);
    EXPECT_EQ(s.code(), rinaInvalidArgument) << bad;
    EXPECT_NE(s.message().find(bad), std::string::npos) << s.message();
  }
  TransportChoice c;
  EXPECT_EQ(chooseTransport(devices({"mlx5_0"}), "mlx5_0:x", false, &c).code(),
            rinaInvalidArgument);
}

TEST(VerbsWcStatus, TableNamesTheStatusAndTheLikelyCause) {
  EXPECT_EQ(wcStatusText(0), "success (IBV_WC_SUCCESS)");
  std::string retry = wcStatusText(12);
  EXPECT_EQ(retry.rfind("retry exceeded", 0), 0u) << retry;
  EXPECT_NE(retry.find("IBV_WC_RETRY_EXC_ERR"), std::string::npos);
  EXPECT_NE(retry.find("RINA_IB_TIMEOUT"), std::string::npos);
  EXPECT_NE(wcStatusText(10).find("remote access error"), std::string::npos);
  EXPECT_NE(wcStatusText(10).find("IBV_WC_REM_ACCESS_ERR"), std::string::npos);
  EXPECT_NE(wcStatusText(13).find("IBV_WC_RNR_RETRY_EXC_ERR"), std::string::npos);
  EXPECT_NE(wcStatusText(5).find("flushed"), std::string::npos);
  EXPECT_EQ(wcStatusText(24), "unknown completion status 24");
  EXPECT_EQ(wcStatusText(-1), "unknown completion status -1");
}

TEST(VerbsWcStatus, RemoteAndLocalFailuresAreTold) {
  // The peer's side: its adapter refused the write, or never acknowledged it.
  for (int remote : {7, 9, 10, 11, 12, 13, 15, 16, 20}) {
    EXPECT_TRUE(wcStatusIsRemote(remote)) << wcStatusText(remote);
  }
  // This side: bad work requests, registrations, a queue pair already failed.
  for (int local : {0, 1, 2, 4, 5, 8, 19, 21, 24, -1}) {
    EXPECT_FALSE(wcStatusIsRemote(local)) << wcStatusText(local);
  }
}

#ifdef RINA_TEST_HAVE_VERBS
// Against libibverbs' own names: every known status maps to the same enum
// constant, so our table cannot drift from verbs.h.
TEST(VerbsWcStatus, AgreesWithLibibverbs) {
  const std::pair<int, const char*> known[] = {
      {IBV_WC_SUCCESS, "IBV_WC_SUCCESS"},
      {IBV_WC_LOC_PROT_ERR, "IBV_WC_LOC_PROT_ERR"},
      {IBV_WC_WR_FLUSH_ERR, "IBV_WC_WR_FLUSH_ERR"},
      {IBV_WC_REM_ACCESS_ERR, "IBV_WC_REM_ACCESS_ERR"},
      {IBV_WC_RETRY_EXC_ERR, "IBV_WC_RETRY_EXC_ERR"},
      {IBV_WC_RNR_RETRY_EXC_ERR, "IBV_WC_RNR_RETRY_EXC_ERR"},
      {IBV_WC_GENERAL_ERR, "IBV_WC_GENERAL_ERR"},
  };
  for (auto [value, name] : known) {
    EXPECT_NE(wcStatusText(value).find(std::string("(") + name + ")"), std::string::npos)
        << name << " -> " << wcStatusText(value);
  }
}
#endif

TEST(VerbsQpInfo, RoundTripsEveryField) {
  QpInfo q;
  q.qpn = 0xabcdef;
  q.lid = 0x1234;
  q.port = 2;
  q.gidIndex = 3;
  for (int i = 0; i < 16; ++i) q.gid[i] = static_cast<uint8_t>(0xf0 + i);
  q.psn = 0x123456;
  q.mtu = 5;
  q.ringAddr = 0x7f0012345000ull;
  q.ringRkey = 0xdeadbeef;
  q.slotBytes = 65536;
  q.slots = 16;
  q.creditStart = 0x7ffffff0;
  QpInfoWire w = encodeQpInfo(q);
  // Little endian at fixed offsets: the QPN right after magic and version.
  EXPECT_EQ(w[8], 0xef);
  EXPECT_EQ(w[10], 0xab);
  EXPECT_EQ(w[0], 'R');
  QpInfo back;
  ASSERT_TRUE(decodeQpInfo(w, &back).ok());
  EXPECT_EQ(back.qpn, q.qpn);
  EXPECT_EQ(back.lid, q.lid);
  EXPECT_EQ(back.port, q.port);
  EXPECT_EQ(back.gidIndex, q.gidIndex);
  EXPECT_EQ(back.gid, q.gid);
  EXPECT_EQ(back.psn, q.psn);
  EXPECT_EQ(back.mtu, q.mtu);
  EXPECT_EQ(back.ringAddr, q.ringAddr);
  EXPECT_EQ(back.ringRkey, q.ringRkey);
  EXPECT_EQ(back.slotBytes, q.slotBytes);
  EXPECT_EQ(back.slots, q.slots);
  EXPECT_EQ(back.creditStart, q.creditStart);
}

TEST(VerbsQpInfo, RejectsMalformedRecords) {
  QpInfo good;
  good.qpn = 7;
  good.psn = 1;
  good.mtu = 3;
  good.ringAddr = 0x1000;
  good.slotBytes = 4096;
  good.slots = 8;
  QpInfo out;
  ASSERT_TRUE(decodeQpInfo(encodeQpInfo(good), &out).ok());
  auto expectBad = [&](QpInfo q, const char* what) {
    Status s = decodeQpInfo(encodeQpInfo(q), &out);
    EXPECT_EQ(s.code(), rinaRemoteError) << what;
    EXPECT_NE(s.message().find(what), std::string::npos) << s.message();
  };
  QpInfo q = good;
  q.qpn = 0x1000000;
  expectBad(q, "QP number");
  q = good;
  q.slots = 12;
  expectBad(q, "slot count");
  q = good;
  q.slotBytes = 100;
  expectBad(q, "slot size");
  q = good;
  q.mtu = 9;
  expectBad(q, "MTU");
  q = good;
  q.ringAddr = 0;
  expectBad(q, "ring address");
  QpInfoWire w = encodeQpInfo(good);
  w[0] ^= 1;
  EXPECT_NE(decodeQpInfo(w, &out).message().find("magic"), std::string::npos);
  w = encodeQpInfo(good);
  w[4] = 9;
  EXPECT_NE(decodeQpInfo(w, &out).message().find("version 9"), std::string::npos);
}

}  // namespace
}  // namespace rina::transport::verbs
