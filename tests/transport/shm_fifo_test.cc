// The shared-memory FIFO: every byte arrives in order whatever the message
// sizes and however sends and receives interleave, on one thread and on two
// (checked against the bytes sent), reduce-on-receive adds whole elements across the wrap, and a
// message that finds the FIFO empty starts again at its beginning, so traffic that fits keeps to
// the same pages (read from a third mapping of the segment).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/socket.h"
#include "reduce/reduce.h"
#include "transport/shm_connection.h"
#include "transport/wait_set.h"

namespace rina::transport {
namespace {

constexpr uint32_t kFifoBytes = 4096;

struct Pair {
  std::unique_ptr<ShmConnection> low;   // sends on fifo 0
  std::unique_ptr<ShmConnection> high;  // receives fifo 0
  ShmSegment view;                      // the test's own mapping
  int fifo0 = 0;                        // offset of fifo 0's data in the view
};

Pair makePair() {
  Pair p;
  const std::string name = "/rina-test-fifo-" + std::to_string(getpid());
  ShmSegment created, opened;
  EXPECT_TRUE(ShmSegment::create(name, kFifoBytes, &created).ok());
  EXPECT_TRUE(ShmSegment::open(name, &opened).ok());
  EXPECT_TRUE(ShmSegment::open(name, &p.view).ok());
  created.unlink();
  int sv[2];
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  p.low = std::make_unique<ShmConnection>(1, true, std::move(created), Fd(sv[0]));
  p.high = std::make_unique<ShmConnection>(0, false, std::move(opened), Fd(sv[1]));
  return p;
}

// Sends what fits; returns the bytes moved.
size_t sendSome(ShmConnection& c, const uint8_t* data, size_t len) {
  size_t moved = 0;
  EXPECT_TRUE(c.trySend(data, len, &moved).ok());
  return moved;
}

size_t recvSome(ShmConnection& c, uint8_t* dst, size_t len) {
  size_t moved = 0;
  EXPECT_TRUE(c.tryRecv(dst, len, RecvReduce{}, &moved).ok());
  return moved;
}

TEST(ShmFifo, RandomMessagesArriveInOrderAcrossWrapsAndRestarts) {
  Pair p = makePair();
  std::mt19937 gen(7);
  // Sizes from 1 byte to 3x the FIFO, so messages wrap, fill it and find it
  // empty or not at random.
  std::uniform_int_distribution<size_t> sizeDist(1, 3 * kFifoBytes);
  std::uniform_int_distribution<size_t> chunkDist(1, kFifoBytes);
  const int kMessages = 400;
  std::vector<std::vector<uint8_t>> msgs(kMessages);
  for (int m = 0; m < kMessages; ++m) {
    msgs[m].resize(sizeDist(gen));
    for (size_t i = 0; i < msgs[m].size(); ++i) msgs[m][i] = static_cast<uint8_t>(gen());
  }
  int sm = 0, rm = 0;
  size_t sdone = 0, rdone = 0;
  std::vector<uint8_t> got;
  size_t wrong = 0;
  // Bounded in passes; a pass in which nothing can move would be a bug
  // (the producer waits only while the consumer has bytes to take).
  for (int pass = 0; pass < 1000000 && rm < kMessages; ++pass) {
    // Either side moves a random amount, so the producer runs ahead by
    // anything from nothing to a full FIFO.
    if (sm < kMessages && (gen() % 2 == 0 || rm == sm)) {
      const size_t want = std::min(chunkDist(gen), msgs[sm].size() - sdone);
      const size_t n = sendSome(*p.low, msgs[sm].data() + sdone, want);
      sdone += n;
      if (sdone == msgs[sm].size()) {
        p.low->endMessage(Direction::kSend);
        ++sm;
        sdone = 0;
      }
    }
    if (rm < sm || (rm == sm && sdone > 0)) {
      if (got.size() != msgs[rm].size()) got.assign(msgs[rm].size(), 0);
      const size_t want = std::min(chunkDist(gen), got.size() - rdone);
      const size_t n = recvSome(*p.high, got.data() + rdone, want);
      rdone += n;
      if (rdone == got.size()) {
        if (got != msgs[rm]) ++wrong;
        p.high->endMessage(Direction::kRecv);
        ++rm;
        rdone = 0;
        got.clear();
      }
    }
  }
  EXPECT_EQ(rm, kMessages) << "messages received";
  EXPECT_EQ(wrong, 0u) << "messages whose bytes differ from what was sent";
}

// Producer and consumer on two threads, each sleeping in a WaitSet when it
// cannot move (as the engine does): the restarts' publication order is
// what keeps the consumer on the producer's messages.
TEST(ShmFifo, TwoThreadsStreamRandomMessages) {
  Pair p = makePair();
  const int kMessages = 3000;
  std::vector<size_t> sizes(kMessages);
  std::mt19937 gen(11);
  for (size_t& len : sizes) len = 1 + gen() % (2 * kFifoBytes);
  auto byteOf = [](int m, size_t i) { return static_cast<uint8_t>(m * 131 + i * 7); };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  auto wait = [](ShmConnection& c, bool send) {
    WaitSet ws;
    c.armWait(ws, send, !send);
    ws.wait(100);
  };
  std::thread producer([&] {
    std::mt19937 chunks(5);
    std::vector<uint8_t> msg;
    for (int m = 0; m < kMessages && std::chrono::steady_clock::now() < deadline; ++m) {
      msg.resize(sizes[m]);
      for (size_t i = 0; i < msg.size(); ++i) msg[i] = byteOf(m, i);
      size_t done = 0;
      while (done < msg.size() && std::chrono::steady_clock::now() < deadline) {
        const size_t n = sendSome(*p.low, msg.data() + done,
                                  std::min<size_t>(msg.size() - done, 1 + chunks() % kFifoBytes));
        done += n;
        if (n == 0) wait(*p.low, true);
      }
      p.low->endMessage(Direction::kSend);
    }
  });
  size_t wrong = 0;
  int received = 0;
  std::vector<uint8_t> got;
  for (int m = 0; m < kMessages && std::chrono::steady_clock::now() < deadline; ++m) {
    got.assign(sizes[m], 0);
    size_t done = 0;
    while (done < got.size() && std::chrono::steady_clock::now() < deadline) {
      const size_t n = recvSome(*p.high, got.data() + done, got.size() - done);
      done += n;
      if (n == 0) wait(*p.high, false);
    }
    p.high->endMessage(Direction::kRecv);
    if (done < got.size()) break;
    for (size_t i = 0; i < got.size(); ++i) wrong += got[i] != byteOf(m, i);
    ++received;
  }
  producer.join();
  EXPECT_EQ(received, kMessages) << "messages received within 60 s";
  EXPECT_EQ(wrong, 0u) << "bytes that differ from what was sent";
}

TEST(ShmFifo, MessageFindingTheFifoEmptyStartsAtItsBeginning) {
  Pair p = makePair();
  const char* data0 = p.view.data(0);
  std::vector<uint8_t> a(1000, 0xaa), b(300, 0xbb), c(200, 0xcc), got(1000);
  ASSERT_EQ(sendSome(*p.low, a.data(), a.size()), a.size());
  p.low->endMessage(Direction::kSend);
  ASSERT_EQ(recvSome(*p.high, got.data(), a.size()), a.size());
  p.high->endMessage(Direction::kRecv);
  EXPECT_EQ(std::vector<uint8_t>(got.begin(), got.begin() + 1000), a);
  // Empty now: b goes to offset 0, over a's first bytes.
  ASSERT_EQ(sendSome(*p.low, b.data(), b.size()), b.size());
  p.low->endMessage(Direction::kSend);
  EXPECT_EQ(std::memcmp(data0, b.data(), b.size()), 0) << "b was not written at the start";
  // Not empty (b unread): c follows b at the next 64-byte boundary.
  ASSERT_EQ(sendSome(*p.low, c.data(), c.size()), c.size());
  p.low->endMessage(Direction::kSend);
  EXPECT_EQ(std::memcmp(data0 + 320, c.data(), c.size()), 0) << "c is not after b";
  ASSERT_EQ(recvSome(*p.high, got.data(), b.size()), b.size());
  p.high->endMessage(Direction::kRecv);
  EXPECT_EQ(std::vector<uint8_t>(got.begin(), got.begin() + 300), b);
  ASSERT_EQ(recvSome(*p.high, got.data(), c.size()), c.size());
  p.high->endMessage(Direction::kRecv);
  EXPECT_EQ(std::vector<uint8_t>(got.begin(), got.begin() + 200), c);
}

TEST(ShmFifo, RepeatedMessagesKeepToTheirFirstPages) {
  Pair p = makePair();
  // 100 rounds of a 700-byte message each way round: without restarts they
  // would sweep the whole 4 KiB FIFO every 6 messages.
  std::vector<uint8_t> msg(700), got(700);
  char* data0 = const_cast<char*>(p.view.data(0));
  for (int round = 0; round < 100; ++round) {
    // Marks the FIFO past the first message's extent: nothing may land there.
    std::memset(data0 + 768, 0x5a, kFifoBytes - 768);
    for (size_t i = 0; i < msg.size(); ++i) msg[i] = static_cast<uint8_t>(round + i);
    ASSERT_EQ(sendSome(*p.low, msg.data(), msg.size()), msg.size());
    p.low->endMessage(Direction::kSend);
    ASSERT_EQ(recvSome(*p.high, got.data(), got.size()), got.size());
    p.high->endMessage(Direction::kRecv);
    ASSERT_EQ(got, msg) << "round " << round;
    for (uint32_t i = 768; i < kFifoBytes; ++i) {
      ASSERT_EQ(static_cast<uint8_t>(data0[i]), 0x5a) << "round " << round << " wrote offset " << i;
    }
  }
}

// Receives a whole message of int32 sums (mine + what arrives) while
// sending the rest of theirs as space frees up.
std::vector<int32_t> sumThrough(Pair& p, const std::vector<int32_t>& mine,
                                const std::vector<int32_t>& theirs) {
  const reduce::ReduceFn add = reduce::reduceFunction(rinaInt32, rinaSum);
  const size_t bytes = mine.size() * sizeof(int32_t);
  const auto* in = reinterpret_cast<const uint8_t*>(theirs.data());
  std::vector<int32_t> sum(mine.size());
  size_t sent = 0, received = 0;
  for (int pass = 0; pass < 1000 && received < bytes; ++pass) {
    if (sent < bytes) sent += sendSome(*p.low, in + sent, bytes - sent);
    size_t moved = 0;
    RecvReduce r{add, reinterpret_cast<const char*>(mine.data()) + received, sizeof(int32_t)};
    EXPECT_TRUE(
        p.high->tryRecv(reinterpret_cast<char*>(sum.data()) + received, bytes - received, r, &moved)
            .ok());
    received += moved;
  }
  EXPECT_EQ(received, bytes);
  p.low->endMessage(Direction::kSend);
  p.high->endMessage(Direction::kRecv);
  return sum;
}

TEST(ShmFifo, ReduceOnReceiveAcrossTheWrapAndAfterARestart) {
  Pair p = makePair();
  // 3000 bytes left unread: the sums (2000 bytes) start at 3008 and wrap.
  std::vector<uint8_t> pad(3000, 1), padGot(3000);
  ASSERT_EQ(sendSome(*p.low, pad.data(), pad.size()), pad.size());
  p.low->endMessage(Direction::kSend);
  std::vector<int32_t> mine(500), theirs(500);
  for (int i = 0; i < 500; ++i) mine[i] = i, theirs[i] = 1000 * i;
  const auto* in = reinterpret_cast<const uint8_t*>(theirs.data());
  const size_t first = sendSome(*p.low, in, 2000);
  EXPECT_EQ(first, 1088u) << "space left after the unread 3000 bytes (aligned to 3008)";
  ASSERT_EQ(recvSome(*p.high, padGot.data(), pad.size()), pad.size());
  p.high->endMessage(Direction::kRecv);
  ASSERT_EQ(padGot, pad);
  // The rest of the sums message, then a second one that finds the FIFO
  // empty and restarts at offset 0.
  const reduce::ReduceFn add = reduce::reduceFunction(rinaInt32, rinaSum);
  std::vector<int32_t> sum(500);
  size_t sent = first, received = 0;
  for (int pass = 0; pass < 1000 && received < 2000; ++pass) {
    if (sent < 2000) sent += sendSome(*p.low, in + sent, 2000 - sent);
    size_t moved = 0;
    RecvReduce r{add, reinterpret_cast<const char*>(mine.data()) + received, sizeof(int32_t)};
    ASSERT_TRUE(
        p.high->tryRecv(reinterpret_cast<char*>(sum.data()) + received, 2000 - received, r, &moved)
            .ok());
    received += moved;
  }
  ASSERT_EQ(received, 2000u);
  p.low->endMessage(Direction::kSend);
  p.high->endMessage(Direction::kRecv);
  for (int i = 0; i < 500; ++i) ASSERT_EQ(sum[i], 1001 * i) << "element " << i << " (wrapped)";
  for (int i = 0; i < 500; ++i) theirs[i] = -3 * i;
  sum = sumThrough(p, mine, theirs);
  for (int i = 0; i < 500; ++i) ASSERT_EQ(sum[i], -2 * i) << "element " << i << " (restarted)";
  EXPECT_EQ(std::memcmp(p.view.data(0), theirs.data(), 2000), 0) << "not at the FIFO's start";
}

}  // namespace
}  // namespace rina::transport
