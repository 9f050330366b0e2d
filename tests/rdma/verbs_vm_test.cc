// The verbs transport against a real RDMA stack: Soft-RoCE (rxe0) inside
// the VM of tools/rina-rdma-vm (tests/rdma/checks.sh runs each test there
// as its own check). Outside such a VM there is no device and every test
// skips, saying so.
//
// What each asserts:
//   - a wrong GID index or adapter name fails init on every rank, naming
//     the knob and what the device does have;
//   - a peer killed in the middle of an allreduce: the survivors get
//     rinaRemoteError within RINA_TIMEOUT_MS, and a survivor connected to it
//     names the completion error its queue pair got;
//   - the memory-registration cache hits, misses and evicts real
//     registrations: an evicted key is refused by the NIC (remote access
//     error), a cached one works;
//   - credits: a writer stops at exactly the reader's ring while the reader
//     does not read, sleeps on the completion channel (little CPU), wakes
//     when credits come back, and every byte arrives in order;
//   - all-to-all(v), gather, scatter and reduce over verbs (no shared
//     memory): every block where a serial reference puts it, and the
//     connections that carried them are verbs ones.
#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rank_harness.h"
#include "rina/rina.h"
#include "transport/verbs/verbs_context.h"
#include "transport/verbs/verbs_device.h"
#include "transport/wait_set.h"

namespace rina::testing {
namespace {

using transport::verbs::VerbsContextPtr;

std::string envOr(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

// The device and GID index the VM harness set up; skips elsewhere.
#define REQUIRE_RDMA_DEVICE()                                                               \
  do {                                                                                      \
    if (transport::verbs::probeDevices().names.empty())                                     \
      GTEST_SKIP() << "no RDMA device here: run inside tools/rina-rdma-vm (ctest -L rdma)"; \
  } while (0)

const std::string kDevice = envOr("RDMA_VM_DEVICE", "rxe0");
const std::string kGidIndex = envOr("RDMA_VM_GID_INDEX", "1");

int64_t msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               t0)
      .count();
}

// Init on n threads over verbs with the given knobs; every rank must fail
// with rinaSystemError and a message containing each of `needles`.
void expectInitFails(int n, const std::vector<std::string>& needles) {
  ScopedEnv shm("RINA_SHM_DISABLE", "1");
  ScopedEnv timeout("RINA_TIMEOUT_MS", "30000");
  rinaUniqueId id;
  ASSERT_EQ(rinaGetUniqueId(&id), rinaSuccess);
  std::vector<rinaResult_t> results(n, rinaSuccess);
  std::vector<std::string> errors(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      rinaComm_t comm = nullptr;
      results[r] = rinaCommInitRank(&comm, n, id, r);
      errors[r] = rinaCommGetLastError(nullptr);
      if (comm) rinaCommDestroy(comm);
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(results[r], rinaSystemError) << errors[r];
    for (const std::string& needle : needles) {
      EXPECT_NE(errors[r].find(needle), std::string::npos)
          << "rank " << r << ": no \"" << needle << "\" in: " << errors[r];
    }
    std::printf("rank %d: %s\n", r, errors[r].c_str());
  }
}

TEST(VerbsVm, WrongGidIndexFailsInitNamingTheKnobAndTheTable) {
  REQUIRE_RDMA_DEVICE();
  // Inside the table (rxe has 1024 entries) but empty: only the peer's RTR
  // would reject it without the check at open.
  ScopedEnv gid("RINA_IB_GID_INDEX", "77");
  expectInitFails(2, {"no GID at index 77 (RINA_IB_GID_INDEX)",
                      "its GIDs: 0 fe80:", kGidIndex + " ::ffff:10.77.0.1"});
}

TEST(VerbsVm, MissingAdapterFailsInitListingTheDevices) {
  REQUIRE_RDMA_DEVICE();
  ScopedEnv hca("RINA_IB_HCA", "mlx5_9:1");
  expectInitFails(2, {"RINA_IB_HCA=mlx5_9:1: no such RDMA device", "devices: " + kDevice});
}

// What each surviving rank saw, in memory shared across the fork.
struct Outcome {
  int result;
  int64_t ms;
  char message[512];
};

// The device's packet counter: a process watches it to know that an
// allreduce's traffic is flowing (an event, not a guess at timing).
uint64_t receivedPackets() {
  std::ifstream f("/sys/class/infiniband/" + kDevice + "/ports/1/hw_counters/rcvd_pkts");
  uint64_t v = 0;
  f >> v;
  return v;
}

TEST(VerbsVm, AllToAllAndRootedCallsOverVerbs) {
  REQUIRE_RDMA_DEVICE();
  ScopedEnv shm("RINA_SHM_DISABLE", "1");
  ScopedEnv gid("RINA_IB_GID_INDEX", kGidIndex.c_str());
  ScopedEnv timeout("RINA_TIMEOUT_MS", "60000");
  constexpr int n = 3;
  auto codes = runProcesses(
      n,
      [](int rank, rinaComm_t comm) {
        // Uneven blocks: rank s sends (s + d) * 1000 + 1 int32 to rank d.
        auto countOf = [](int s, int d) { return static_cast<size_t>((s + d) * 1000 + 1); };
        std::vector<size_t> sc(n), sd(n), rc(n), rd(n);
        size_t sendTotal = 0, recvTotal = 0;
        for (int p = 0; p < n; ++p) {
          sc[p] = countOf(rank, p), sd[p] = sendTotal, sendTotal += sc[p];
          rc[p] = countOf(p, rank), rd[p] = recvTotal, recvTotal += rc[p];
        }
        std::vector<int32_t> send(sendTotal), recv(recvTotal, -1);
        for (int p = 0; p < n; ++p) {
          for (size_t i = 0; i < sc[p]; ++i) send[sd[p] + i] = rank * 1000000 + p * 10000 + int(i);
        }
        if (rinaAllToAllv(send.data(), sc.data(), sd.data(), recv.data(), rc.data(), rd.data(),
                          rinaInt32, comm) != rinaSuccess) {
          return 10;
        }
        for (int p = 0; p < n; ++p) {
          for (size_t i = 0; i < rc[p]; ++i) {
            if (recv[rd[p] + i] != p * 1000000 + rank * 10000 + int(i)) return 11;
          }
        }
        const size_t count = 100003;
        std::vector<float> mine(count, rank + 1.0f), all(n * count), back(count);
        if (rinaGather(mine.data(), all.data(), count, rinaFloat32, 1, comm) != rinaSuccess) {
          return 12;
        }
        if (rank == 1) {
          for (int p = 0; p < n; ++p) {
            if (all[p * count + 77] != p + 1.0f) return 13;
          }
        }
        if (rinaScatter(all.data(), back.data(), count, rinaFloat32, 1, comm) != rinaSuccess ||
            back[count - 1] != rank + 1.0f) {
          return 14;
        }
        std::vector<float> sum(count);
        if (rinaReduce(mine.data(), sum.data(), count, rinaFloat32, rinaSum, 2, comm) !=
                rinaSuccess ||
            (rank == 2 && sum[5] != n * (n + 1) / 2.0f)) {
          return 15;
        }
        int links = 0;
        rinaCommGetLinkStats(comm, nullptr, 0, &links);
        std::vector<rinaLinkStats_t> stats(links);
        rinaCommGetLinkStats(comm, stats.data(), links, &links);
        for (const rinaLinkStats_t& l : stats) {
          if (std::string(l.transport) != "verbs") return 16;
        }
        return links == n - 1 ? 0 : 17;
      },
      240);
  EXPECT_EQ(codes, std::vector<int>(n, 0));
}

TEST(VerbsVm, PeerKilledMidCallIsARemoteErrorNamingThePeer) {
  REQUIRE_RDMA_DEVICE();
  constexpr int kTimeoutMs = 30000;
  ScopedEnv shm("RINA_SHM_DISABLE", "1");
  ScopedEnv gid("RINA_IB_GID_INDEX", kGidIndex.c_str());
  ScopedEnv ibTimeout("RINA_IB_TIMEOUT", "14");  // 67 ms per try, 7 tries
  ScopedEnv timeout("RINA_TIMEOUT_MS", std::to_string(kTimeoutMs).c_str());
  auto* out = static_cast<Outcome*>(mmap(nullptr, 3 * sizeof(Outcome), PROT_READ | PROT_WRITE,
                                         MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(out, MAP_FAILED);
  std::memset(out, 0, 3 * sizeof(Outcome));
  auto codes = runProcesses(
      3,
      [out](int rank, rinaComm_t comm) {
        // 16 MiB: seconds of ring traffic under emulation.
        std::vector<float> buf(4 << 20, 1.0f);
        if (rinaAllReduce(buf.data(), buf.data(), 1024, rinaFloat32, rinaSum, comm) !=
            rinaSuccess) {
          return 1;
        }
        std::thread killer;
        if (rank == 2) {
          // Dies once this call's packets are flowing (bounded wait).
          const uint64_t before = receivedPackets();
          killer = std::thread([before] {
            for (int i = 0; i < 200000 && receivedPackets() < before + 200; ++i) {
              std::this_thread::yield();
            }
            raise(SIGKILL);
          });
        }
        auto t0 = std::chrono::steady_clock::now();
        rinaResult_t rc =
            rinaAllReduce(buf.data(), buf.data(), buf.size(), rinaFloat32, rinaSum, comm);
        out[rank].ms = msSince(t0);
        out[rank].result = rc;
        std::snprintf(out[rank].message, sizeof out[rank].message, "%s",
                      rinaCommGetLastError(comm));
        if (killer.joinable()) killer.join();  // rank 2 never gets here
        return 0;
      },
      120);
  EXPECT_EQ(codes[2], 128 + SIGKILL) << "rank 2 finished its call before the kill";
  bool named = false, namesTwo = false;
  for (int r = 0; r < 2; ++r) {
    std::printf("rank %d: result %d after %lld ms: %s\n", r, out[r].result,
                static_cast<long long>(out[r].ms), out[r].message);
    EXPECT_EQ(codes[r], 0);
    EXPECT_EQ(out[r].result, rinaRemoteError) << out[r].message;
    EXPECT_LT(out[r].ms, kTimeoutMs) << out[r].message;
    // What names the dead rank: what the NIC said about the QP to it (retry
    // exceeded: its QP is gone; remote access error: its ring was
    // deregistered first; a flush) or, where the socket the pair met on
    // reported the hang-up before any completion came back (Soft-RoCE keeps
    // answering while it tears the dead process's QPs down), the hang-up.
    // Which comes first is the kernel's timing, so both are right; a
    // survivor that failed first ends its process, so the other may name
    // that survivor instead.
    const bool completion =
        (std::strstr(out[r].message, "RDMA write to peer 2 failed") != nullptr ||
         std::strstr(out[r].message, "RDMA receive from peer 2 failed") != nullptr) &&
        std::strstr(out[r].message, "(IBV_WC_") != nullptr;
    const bool hangUp = std::strstr(out[r].message, "peer 2 hung up") != nullptr;
    namesTwo |= completion || hangUp;
    named |= completion;
  }
  EXPECT_TRUE(namesTwo) << "no survivor named rank 2";
  std::printf("completion error named by a survivor: %s\n", named ? "yes" : "no (hang-up first)");
  munmap(out, 3 * sizeof(Outcome));
}

// The adapter opened as rina opens it, with a small registration cache.
VerbsContextPtr openDevice(size_t cacheEntries) {
  transport::verbs::TransportChoice choice;
  choice.useVerbs = true;
  choice.device = kDevice;
  choice.port = 1;
  transport::verbs::VerbsOptions opt;
  opt.gidIndex = std::atoi(kGidIndex.c_str());
  opt.mrCacheEntries = cacheEntries;
  VerbsContextPtr ctx;
  Status s = transport::verbs::openVerbsContext(choice, opt, &ctx);
  EXPECT_TRUE(s.ok()) << s.message();
  return ctx;
}

// Two RC queue pairs of one device connected to each other, for RDMA
// writes whose keys come from the cache under test.
class LoopbackPair {
 public:
  explicit LoopbackPair(const VerbsContextPtr& ctx) : ctx_(ctx) {
    cq_ = ibv_create_cq(ctx->ctx, 16, nullptr, nullptr, 0);
    for (ibv_qp*& qp : qps_) {
      ibv_qp_init_attr ia{};
      ia.send_cq = ia.recv_cq = cq_;
      ia.qp_type = IBV_QPT_RC;
      ia.cap.max_send_wr = ia.cap.max_recv_wr = 8;
      ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
      qp = ibv_create_qp(ctx->pd, &ia);
    }
    ok_ = cq_ && qps_[0] && qps_[1];
    for (int i = 0; ok_ && i < 2; ++i) ok_ = connect(qps_[i], qps_[1 - i]->qp_num);
  }
  ~LoopbackPair() {
    for (ibv_qp* qp : qps_) {
      if (qp) ibv_destroy_qp(qp);
    }
    if (cq_) ibv_destroy_cq(cq_);
  }
  bool ok() const { return ok_; }

  // An RDMA write of len bytes from local (lkey) to remote (rkey); the
  // completion status, or -1 when none came within 10 s.
  int write(const void* local, uint32_t lkey, void* remote, uint32_t rkey, uint32_t len) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(local), len, lkey};
    ibv_send_wr wr{};
    ibv_send_wr* bad = nullptr;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(remote);
    wr.wr.rdma.rkey = rkey;
    if (ibv_post_send(qps_[0], &wr, &bad) != 0) return -2;
    auto t0 = std::chrono::steady_clock::now();
    ibv_wc wc{};
    while (msSince(t0) < 10000) {
      if (ibv_poll_cq(cq_, 1, &wc) == 1) return wc.status;
      std::this_thread::yield();
    }
    return -1;
  }

 private:
  bool connect(ibv_qp* qp, uint32_t remoteQpn) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
    if (ibv_modify_qp(qp, &a,
                      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) != 0) {
      return false;
    }
    a = ibv_qp_attr{};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = ctx_->portAttr.active_mtu;
    a.dest_qp_num = remoteQpn;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 12;
    a.ah_attr.port_num = 1;
    a.ah_attr.is_global = 1;
    a.ah_attr.grh.dgid = ctx_->gid;
    a.ah_attr.grh.sgid_index = static_cast<uint8_t>(ctx_->opt.gidIndex);
    a.ah_attr.grh.hop_limit = 1;
    if (ibv_modify_qp(qp, &a,
                      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                          IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) != 0) {
      return false;
    }
    a = ibv_qp_attr{};
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 1;
    a.rnr_retry = 1;
    a.max_rd_atomic = 1;
    return ibv_modify_qp(qp, &a,
                         IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                             IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC) == 0;
  }

  VerbsContextPtr ctx_;
  ibv_cq* cq_ = nullptr;
  ibv_qp* qps_[2] = {nullptr, nullptr};
  bool ok_ = false;
};

TEST(VerbsVm, MrCacheHitsMissesAndEvictsRealRegistrations) {
  REQUIRE_RDMA_DEVICE();
  VerbsContextPtr ctx = openDevice(2);
  ASSERT_TRUE(ctx);
  LoopbackPair pair(ctx);
  ASSERT_TRUE(pair.ok()) << "RC loopback pair on " << kDevice;
  transport::verbs::MrCache& cache = *ctx->mrs;
  constexpr size_t kBytes = 64 << 10;
  std::vector<std::vector<char>> buffers(4, std::vector<char>(kBytes));
  auto acquire = [&](int i, size_t offset, size_t len) {
    transport::verbs::MrRegion r;
    Status s = cache.acquire(buffers[i].data() + offset, len, &r);
    EXPECT_TRUE(s.ok()) << s.message();
    return r;
  };

  // A miss registers for real: a write into it with its key lands.
  transport::verbs::MrRegion a = acquire(0, 0, kBytes);
  transport::verbs::MrRegion src = acquire(3, 0, kBytes);
  std::memset(buffers[3].data(), 0x5A, 4096);
  EXPECT_EQ(pair.write(buffers[3].data(), src.keys.lkey, buffers[0].data(), a.keys.rkey, 4096),
            IBV_WC_SUCCESS);
  EXPECT_EQ(buffers[0][4095], 0x5A);
  EXPECT_EQ(cache.misses(), 2u);

  // A range inside it hits the same registration.
  transport::verbs::MrRegion inner = acquire(0, 1024, 2048);
  EXPECT_EQ(inner.keys.rkey, a.keys.rkey);
  EXPECT_EQ(cache.hits(), 1u);
  ASSERT_TRUE(cache.release(inner.id).ok());
  ASSERT_TRUE(cache.release(a.id).ok());

  // Two more buffers in a cache of two entries (src stays pinned): the
  // least recently used unpinned ones go, and the NIC refuses their keys.
  transport::verbs::MrRegion b = acquire(1, 0, kBytes);
  ASSERT_TRUE(cache.release(b.id).ok());
  transport::verbs::MrRegion c = acquire(2, 0, kBytes);
  EXPECT_EQ(cache.evictions(), 2u);
  EXPECT_EQ(cache.entries(), 2u);  // src and c
  EXPECT_EQ(pair.write(buffers[3].data(), src.keys.lkey, buffers[0].data(), a.keys.rkey, 4096),
            IBV_WC_REM_ACCESS_ERR)
      << "the evicted registration of buffer 0 still accepts writes";
  // The pair's QP is in error after that: a fresh pair checks the live key.
  LoopbackPair fresh(ctx);
  ASSERT_TRUE(fresh.ok());
  std::memset(buffers[3].data(), 0x3C, 4096);
  EXPECT_EQ(fresh.write(buffers[3].data(), src.keys.lkey, buffers[2].data(), c.keys.rkey, 4096),
            IBV_WC_SUCCESS);
  EXPECT_EQ(buffers[2][0], 0x3C);
  std::printf("cache: %llu hits, %llu misses, %llu evictions, %zu entries\n",
              static_cast<unsigned long long>(cache.hits()),
              static_cast<unsigned long long>(cache.misses()),
              static_cast<unsigned long long>(cache.evictions()), cache.entries());
  ASSERT_TRUE(cache.release(c.id).ok());
  ASSERT_TRUE(cache.release(src.id).ok());
}

double threadCpuMs() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 +
         (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}

TEST(VerbsVm, CreditsHoldASlowReceiverAndTheWriterSleepsOnTheCompletionChannel) {
  REQUIRE_RDMA_DEVICE();
  VerbsContextPtr ctx = openDevice(64);
  ASSERT_TRUE(ctx);
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  // Peer ids as two ranks would see each other: connection 0 talks to 1.
  std::unique_ptr<transport::verbs::PendingVerbsConnection> p0, p1;
  ASSERT_TRUE(transport::verbs::prepareVerbsConnection(ctx, 1, Fd(sv[0]), &p0).ok());
  ASSERT_TRUE(transport::verbs::prepareVerbsConnection(ctx, 0, Fd(sv[1]), &p1).ok());
  const transport::verbs::QpInfo i0 = p0->localInfo(), i1 = p1->localInfo();
  const size_t ring = size_t{i1.slots} * i1.slotBytes;
  std::unique_ptr<transport::Connection> writer, reader;
  ASSERT_TRUE(p0->connect(i1, &writer).ok());
  ASSERT_TRUE(p1->connect(i0, &reader).ok());
  EXPECT_STREQ(writer->kind(), "verbs");

  const size_t total = 3 * ring + 12345;
  std::vector<uint8_t> data(total), got(total, 0);
  for (size_t i = 0; i < total; ++i) data[i] = static_cast<uint8_t>(i * 131 + (i >> 12));

  // The slow receiver: reads nothing until the writer says it is stuck,
  // then half a ring (what makes it hand credits back), then waits for the
  // writer to be stuck again.
  std::mutex mu;
  std::condition_variable cv;
  uint64_t stuckCount = 0;
  bool writerDone = false;
  std::atomic<bool> readerFailed{false};
  std::thread slow([&] {
    size_t have = 0;
    uint64_t seen = 0;
    auto t0 = std::chrono::steady_clock::now();
    while (have < total && msSince(t0) < 120000) {
      {
        std::unique_lock<std::mutex> lock(mu);
        if (!cv.wait_for(lock, std::chrono::seconds(60),
                         [&] { return stuckCount > seen || writerDone; })) {
          break;
        }
        seen = stuckCount;
      }
      const size_t burst = std::min(total, have + ring / 2);
      while (have < burst && msSince(t0) < 120000) {
        size_t moved = 0;
        Status s = reader->tryRecv(got.data() + have, burst - have, {}, &moved);
        if (!s.ok()) {
          ADD_FAILURE() << s.message();
          break;
        }
        have += moved;
        if (moved == 0) {
          transport::WaitSet ws;
          reader->armWait(ws, false, true);
          ws.wait(100);
        }
      }
    }
    reader->endMessage(transport::Direction::kRecv);
    if (have != total) readerFailed = true;
  });

  size_t sent = 0;
  size_t firstStop = 0;
  int sleeps = 0;
  double sleptCpuMs = 0, sleptWallMs = 0, longestMs = 0;
  auto t0 = std::chrono::steady_clock::now();
  while (sent < total && msSince(t0) < 120000) {
    size_t moved = 0;
    Status s = writer->trySend(data.data() + sent, total - sent, &moved);
    ASSERT_TRUE(s.ok()) << s.message();
    sent += moved;
    if (moved > 0) continue;
    if (firstStop == 0) firstStop = sent;  // the reader has not read a byte yet
    {
      std::lock_guard<std::mutex> lock(mu);
      ++stuckCount;
    }
    cv.notify_one();
    // Blocked on credits: sleep on the completion channel until they come.
    transport::WaitSet ws;
    writer->armWait(ws, true, false);
    const double cpu0 = threadCpuMs();
    const auto w0 = std::chrono::steady_clock::now();
    ws.wait(20000);
    const auto took = static_cast<double>(msSince(w0));
    sleptWallMs += took;
    longestMs = std::max(longestMs, took);
    sleptCpuMs += threadCpuMs() - cpu0;
    ++sleeps;
  }
  writer->endMessage(transport::Direction::kSend);
  {
    std::lock_guard<std::mutex> lock(mu);
    writerDone = true;
  }
  cv.notify_one();
  slow.join();
  ASSERT_FALSE(readerFailed) << "the reader did not get all " << total << " bytes";
  EXPECT_EQ(firstStop, ring) << "the writer must stop exactly at the reader's ring";
  EXPECT_EQ(sent, total);
  EXPECT_TRUE(got == data) << "bytes arrived changed or out of order";
  std::printf(
      "ring %zu bytes; writer stopped first at %zu; %d sleeps, %.0f ms asleep (longest %.0f), "
      "%.1f ms CPU\n",
      ring, firstStop, sleeps, sleptWallMs, longestMs, sleptCpuMs);
  // Each half ring read hands credits back once: about 2 x total / ring
  // sleeps, each ended by a completion event (the data writes' own
  // completions may end a few early), none by its 20 s limit: a writer that
  // did not sleep on the channel would come back from wait() without cause
  // many times. And its CPU time while waiting stays below half the wall
  // time, plus 20 ms for the wake-ups themselves (when the reader is quick
  // the sleeps last a few ms and their CPU time is mostly that).
  const int halves = static_cast<int>(2 * total / ring);
  EXPECT_GE(sleeps, halves - 1);
  EXPECT_LE(sleeps, 4 * halves + 16) << "the completion channel woke the writer without cause";
  EXPECT_LT(longestMs, 10000.0);
  EXPECT_LT(sleptCpuMs, 0.5 * sleptWallMs + 20.0);
}

}  // namespace
}  // namespace rina::testing
