// The point-to-point channels' framed shared-memory connection: every byte
// arrives in order whatever the send and receive sizes (frames wrap at the
// FIFO's end, fill it, and are read in pieces), checked against the bytes
// sent, on one thread and on two that sleep in a WaitSet; a gathered send
// is one frame (its length word in the first line, both parts after it);
// every short length arrives intact, nothing written past it; a
// leftover word in the FIFO never reads as a frame; a reduce on receive is
// refused. A sender whose receiver has read everything starts the FIFO's
// next lap once past ShmFrameConnection::kLapRestartBytes, and only then;
// a frame length that runs past the FIFO's end is reported as corrupt.
#include "transport/shm_frames.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/socket.h"
#include "reduce/reduce.h"
#include "transport/wait_set.h"

namespace rina::transport {
namespace {

constexpr uint32_t kFifoBytes = 4096;
// Large enough for the sender to start laps early (kLapRestartBytes).
constexpr uint32_t kLappingFifoBytes = 256 << 10;

struct Pair {
  std::unique_ptr<ShmFrameConnection> low;   // sends on fifo 0
  std::unique_ptr<ShmFrameConnection> high;  // receives fifo 0
  ShmSegment view;                           // the test's own mapping
};

Pair makePair(uint32_t fifoBytes = kFifoBytes) {
  Pair p;
  const std::string name = "/rina-test-frames-" + std::to_string(getpid());
  ShmSegment created, opened;
  EXPECT_TRUE(ShmSegment::create(name, fifoBytes, &created).ok());
  EXPECT_TRUE(ShmSegment::open(name, &opened).ok());
  EXPECT_TRUE(ShmSegment::open(name, &p.view).ok());
  created.unlink();
  int sv[2];
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  p.low = std::make_unique<ShmFrameConnection>(1, true, std::move(created), Fd(sv[0]), 0);
  p.high = std::make_unique<ShmFrameConnection>(0, false, std::move(opened), Fd(sv[1]), 0);
  return p;
}

size_t sendSome(ShmFrameConnection& c, const uint8_t* data, size_t len) {
  size_t moved = 0;
  EXPECT_TRUE(c.trySend(data, len, &moved).ok());
  return moved;
}

size_t recvSome(ShmFrameConnection& c, uint8_t* dst, size_t len) {
  size_t moved = 0;
  EXPECT_TRUE(c.tryRecv(dst, len, RecvReduce{}, &moved).ok());
  return moved;
}

class ShmFramesBySize : public ::testing::TestWithParam<uint32_t> {};

// With the larger FIFO the receiver is sometimes done when the sender
// passes kLapRestartBytes, sometimes not: laps start early and late.
TEST_P(ShmFramesBySize, RandomStreamArrivesInOrderAcrossWraps) {
  const uint32_t fifoBytes = GetParam();
  Pair p = makePair(fifoBytes);
  std::mt19937 gen(7);
  std::uniform_int_distribution<size_t> chunk(1, 2 * kFifoBytes);
  std::vector<uint8_t> stream(std::max<size_t>(400 * kFifoBytes, 8 * size_t{fifoBytes}));
  for (uint8_t& b : stream) b = static_cast<uint8_t>(gen());
  std::vector<uint8_t> got(stream.size(), 0);
  size_t sent = 0, received = 0;
  // Bounded in passes; a pass where neither side can move would be a bug
  // (the sender waits only while the receiver has bytes to take).
  for (int pass = 0; pass < 1000000 && received < stream.size(); ++pass) {
    if (sent < stream.size() && gen() % 2 == 0) {
      // Half the sends gather two parts, as a header and its payload go.
      const size_t want = std::min(chunk(gen), stream.size() - sent);
      size_t n = 0;
      if (gen() % 2 == 0 && want > 1) {
        const size_t first = 1 + gen() % (want - 1);
        ASSERT_TRUE(p.low
                        ->trySendGather(stream.data() + sent, first, stream.data() + sent + first,
                                        want - first, &n)
                        .ok());
      } else {
        n = sendSome(*p.low, stream.data() + sent, want);
      }
      sent += n;
    }
    if (received < sent) {
      const size_t want = std::min(chunk(gen), stream.size() - received);
      received += recvSome(*p.high, got.data() + received, want);
    }
  }
  ASSERT_EQ(received, stream.size());
  EXPECT_TRUE(got == stream) << "bytes differ from what was sent";
}

uint32_t wordAt(const char* data, uint32_t offset) {
  uint32_t word = 0;
  std::memcpy(&word, data + offset, sizeof word);
  return word;
}

// A ping-pong's frames (each read before the next is sent) stay in the
// FIFO's first kLapRestartBytes and one frame: past that, the next frame
// begins offset 0 of the next lap, the jump said by a word of all ones.
TEST(ShmFrames, ReadEverythingStartsTheNextLap) {
  Pair p = makePair(kLappingFifoBytes);
  const char* data0 = p.view.data(0);
  std::vector<uint8_t> msg(200), got(200);
  const uint32_t span = 256;  // 8-byte prefix + 200, in 64-byte lines
  const uint32_t restart = ShmFrameConnection::kLapRestartBytes;
  uint32_t expectAt = 0;  // where the next frame begins (FIFO offset)
  for (int m = 0; m < 1000; ++m) {
    for (size_t i = 0; i < msg.size(); ++i) msg[i] = static_cast<uint8_t>(m + i);
    ASSERT_EQ(sendSome(*p.low, msg.data(), msg.size()), msg.size()) << "message " << m;
    if (expectAt >= restart) {
      EXPECT_EQ(wordAt(data0, expectAt), 0xffffffffu) << "message " << m;
      expectAt = 0;
    }
    ASSERT_EQ(wordAt(data0, expectAt), msg.size()) << "message " << m << " at " << expectAt;
    EXPECT_EQ(0, std::memcmp(data0 + expectAt + 8, msg.data(), msg.size())) << "message " << m;
    ASSERT_EQ(recvSome(*p.high, got.data(), got.size()), got.size()) << "message " << m;
    EXPECT_EQ(got, msg) << "message " << m;
    expectAt += span;
  }
  // 1000 frames of 256 bytes (several laps' worth) never went past the restart.
  for (uint32_t at = restart + span; at < kLappingFifoBytes; at += 64) {
    ASSERT_EQ(wordAt(data0, at), 0u) << "a frame word written at " << at;
  }
  EXPECT_EQ(recvSome(*p.high, got.data(), 1), 0u);
}

// The lap starts at the first frame from kLapRestartBytes on, not one line
// before: 64-byte frames that reach it exactly, and a 128-byte frame that
// crosses it from one line before.
TEST(ShmFrames, LapStartsAtTheRestartOffset) {
  const uint32_t restart = ShmFrameConnection::kLapRestartBytes;
  for (uint32_t lastSpan : {64u, 128u}) {
    Pair p = makePair(kLappingFifoBytes);
    const char* data0 = p.view.data(0);
    std::vector<uint8_t> msg(lastSpan - 8), got(lastSpan);
    // 56-byte messages (one line each) up to one line before the restart.
    for (uint32_t at = 0; at < restart - 64; at += 64) {
      ASSERT_EQ(sendSome(*p.low, msg.data(), 56), 56u);
      ASSERT_EQ(recvSome(*p.high, got.data(), 56), 56u);
    }
    ASSERT_EQ(sendSome(*p.low, msg.data(), msg.size()), msg.size());
    EXPECT_EQ(wordAt(data0, restart - 64), msg.size())
        << "a frame one line before the restart starts a lap (last span " << lastSpan << ")";
    ASSERT_EQ(recvSome(*p.high, got.data(), msg.size()), msg.size());
    const uint32_t end = restart - 64 + lastSpan;
    for (uint8_t& b : msg) b = 0x5a;
    ASSERT_EQ(sendSome(*p.low, msg.data(), 10), 10u);
    EXPECT_EQ(wordAt(data0, end), 0xffffffffu) << "no jump at " << end;
    EXPECT_EQ(wordAt(data0, 0), 10u) << "the frame after the jump is not at offset 0";
    ASSERT_EQ(recvSome(*p.high, got.data(), 10), 10u);
    EXPECT_EQ(0, std::memcmp(got.data(), msg.data(), 10));
    EXPECT_EQ(recvSome(*p.high, got.data(), 1), 0u);
  }
}

// Frames over 4 KiB do not start laps early: a ping-pong of 20000-byte
// messages follows on past kLapRestartBytes, every byte arriving.
TEST(ShmFrames, LargeFramesKeepTheLap) {
  Pair p = makePair(kLappingFifoBytes);
  const char* data0 = p.view.data(0);
  const size_t bytes = 20000;
  const uint32_t span = 20032;  // 8-byte prefix + 20000, in 64-byte lines
  std::vector<uint8_t> msg(bytes), got(bytes);
  for (int m = 0; m < 4; ++m) {
    for (size_t i = 0; i < bytes; ++i) msg[i] = static_cast<uint8_t>(m * 7 + i);
    ASSERT_EQ(sendSome(*p.low, msg.data(), bytes), bytes) << "message " << m;
    EXPECT_EQ(wordAt(data0, m * span), bytes) << "message " << m << " does not follow on";
    ASSERT_EQ(recvSome(*p.high, got.data(), bytes), bytes);
    ASSERT_EQ(got, msg) << "message " << m;
  }
}

// A short frame right after a long one (a large message's header after the
// payload before it) follows on; the short frame after it starts the lap.
TEST(ShmFrames, AShortFrameAfterALongOneKeepsTheLap) {
  Pair p = makePair(kLappingFifoBytes);
  const char* data0 = p.view.data(0);
  const size_t bytes = 20000;
  const uint32_t span = 20032;  // past kLapRestartBytes
  std::vector<uint8_t> msg(bytes, 0x33), got(bytes);
  ASSERT_EQ(sendSome(*p.low, msg.data(), bytes), bytes);
  ASSERT_EQ(recvSome(*p.high, got.data(), bytes), bytes);
  ASSERT_EQ(sendSome(*p.low, msg.data(), 10), 10u);
  EXPECT_EQ(wordAt(data0, span), 10u) << "the short frame after the long one started a lap";
  ASSERT_EQ(recvSome(*p.high, got.data(), 10), 10u);
  for (size_t i = 0; i < 10; ++i) msg[i] = static_cast<uint8_t>(i + 1);
  ASSERT_EQ(sendSome(*p.low, msg.data(), 10), 10u);
  EXPECT_EQ(wordAt(data0, span + 64), 0xffffffffu) << "the second short frame kept the lap";
  EXPECT_EQ(wordAt(data0, 0), 10u);
  ASSERT_EQ(recvSome(*p.high, got.data(), 10), 10u);
  EXPECT_EQ(0, std::memcmp(got.data(), msg.data(), 10));
}

// A receiver that has not read everything keeps the sender going round
// the whole FIFO: every byte arrives in order.
TEST(ShmFrames, UnreadFramesKeepTheLap) {
  Pair p = makePair(kLappingFifoBytes);
  const char* data0 = p.view.data(0);
  std::vector<uint8_t> msg(1000), got(1000);
  const uint32_t span = 1024;
  int sent = 0, received = 0;
  auto fill = [&](int m) {
    for (size_t i = 0; i < msg.size(); ++i) msg[i] = static_cast<uint8_t>(m * 3 + i);
  };
  // 40 frames unread: the sender passes kLapRestartBytes with all behind it.
  for (; sent < 40; ++sent) {
    fill(sent);
    ASSERT_EQ(sendSome(*p.low, msg.data(), msg.size()), msg.size());
  }
  EXPECT_EQ(wordAt(data0, 39 * span), msg.size()) << "the 40th frame is not where it follows on";
  // Then one read per send, forty frames behind, for three laps.
  for (; sent < 840; ++sent) {
    fill(sent);
    ASSERT_EQ(sendSome(*p.low, msg.data(), msg.size()), msg.size()) << "message " << sent;
    ASSERT_EQ(recvSome(*p.high, got.data(), got.size()), got.size());
    fill(received++);
    ASSERT_EQ(got, msg) << "message " << received - 1;
  }
  for (; received < sent; ++received) {
    ASSERT_EQ(recvSome(*p.high, got.data(), got.size()), got.size());
    fill(received);
    ASSERT_EQ(got, msg) << "message " << received;
  }
  EXPECT_EQ(recvSome(*p.high, got.data(), 1), 0u);
}

// A frame length from the peer that would run past the FIFO's end is an
// error naming the peer, not a read outside the segment.
TEST(ShmFrames, FrameLongerThanTheFifoIsCorrupt) {
  Pair p = makePair();
  std::vector<uint8_t> msg(100, 1), got(kFifoBytes);
  ASSERT_EQ(sendSome(*p.low, msg.data(), msg.size()), msg.size());
  const uint32_t bad = kFifoBytes;  // the prefix leaves fewer than this
  std::memcpy(p.view.data(0), &bad, sizeof bad);
  size_t n = 0;
  Status s = p.high->tryRecv(got.data(), got.size(), RecvReduce{}, &n);
  EXPECT_EQ(s.code(), rinaRemoteError);
  EXPECT_NE(s.message().find("rank 0 sent a frame of 4096 bytes"), std::string::npos)
      << s.message();
}

// The receiver never takes leftover bytes for a frame: the FIFO is first
// filled with words that look like frame lengths, then a stream goes through
// whose frames start where the leftovers were.
TEST(ShmFrames, LeftoverWordsAreNotFrames) {
  Pair p = makePair();
  std::vector<uint8_t> junk(kFifoBytes, 0x01);  // every word reads 0x01010101
  std::vector<uint8_t> got(kFifoBytes);
  // Wrap the FIFO full of junk once, reading it all back.
  size_t done = 0;
  while (done < 4 * kFifoBytes) {
    const size_t n = sendSome(*p.low, junk.data(), 100);
    ASSERT_EQ(recvSome(*p.high, got.data(), n), n);
    done += n;
  }
  // Nothing was sent: nothing is there, wherever the receiver looks.
  EXPECT_EQ(recvSome(*p.high, got.data(), 1), 0u);
  std::vector<uint8_t> msg(777);
  for (size_t i = 0; i < msg.size(); ++i) msg[i] = static_cast<uint8_t>(i * 5);
  for (int round = 0; round < 50; ++round) {
    // A frame stops at the FIFO's end: the rest of the message follows in
    // the next one, from the FIFO's start.
    size_t out = 0, in = 0;
    while (in < msg.size()) {
      if (out < msg.size()) out += sendSome(*p.low, msg.data() + out, msg.size() - out);
      const size_t n = recvSome(*p.high, got.data() + in, std::min<size_t>(64, out - in));
      ASSERT_GT(n, 0u) << "a published frame is not readable";
      in += n;
    }
    EXPECT_EQ(0, std::memcmp(got.data(), msg.data(), msg.size())) << "round " << round;
    EXPECT_EQ(recvSome(*p.high, got.data(), 1), 0u)
        << "a byte beyond what was sent, round " << round;
  }
}

TEST(ShmFrames, GatheredSendIsOneFrame) {
  Pair p = makePair();
  const char* data0 = p.view.data(0);
  std::vector<uint8_t> header(48, 0xab), payload(8, 0xcd);
  size_t n = 0;
  ASSERT_TRUE(
      p.low->trySendGather(header.data(), header.size(), payload.data(), payload.size(), &n).ok());
  ASSERT_EQ(n, 56u);
  // One length word, then both parts: the whole message in the first line.
  uint32_t word = 0;
  std::memcpy(&word, data0, sizeof word);
  EXPECT_EQ(word, 56u);
  EXPECT_EQ(0, std::memcmp(data0 + 8, header.data(), header.size()));
  EXPECT_EQ(0, std::memcmp(data0 + 56, payload.data(), payload.size()));
  // The next frame's word, beyond it, reads "nothing yet".
  std::memcpy(&word, data0 + 64, sizeof word);
  EXPECT_EQ(word, 0u);
}

// Every length from one byte to past two lines, split at a random point on
// both sides (a header and its payload, a receive in pieces), arrives as
// sent, and the receive writes nothing past its length.
TEST(ShmFrames, EveryShortLengthArrivesIntact) {
  Pair p = makePair();
  std::mt19937 gen(11);
  constexpr size_t kGuard = 16;
  constexpr uint8_t kUntouched = 0x5a;
  for (size_t len = 1; len <= 130; ++len) {
    std::vector<uint8_t> msg(len);
    for (uint8_t& b : msg) b = static_cast<uint8_t>(gen());
    const size_t first = gen() % (len + 1);
    size_t n = 0;
    ASSERT_TRUE(p.low->trySendGather(msg.data(), first, msg.data() + first, len - first, &n).ok());
    // At the FIFO's end a frame stops short (frames do not wrap): the rest
    // goes in the next one, from the FIFO's start.
    if (n < len) n += sendSome(*p.low, msg.data() + n, len - n);
    ASSERT_EQ(n, len);
    std::vector<uint8_t> got(len + kGuard, kUntouched);
    size_t r = recvSome(*p.high, got.data(), gen() % (len + 1));
    r += recvSome(*p.high, got.data() + r, len - r);
    ASSERT_EQ(r, len);
    EXPECT_TRUE(std::equal(msg.begin(), msg.end(), got.begin()))
        << len << " bytes, split at " << first;
    EXPECT_EQ(std::count(got.begin() + len, got.end(), kUntouched), kGuard) << len << " bytes";
  }
}

TEST(ShmFrames, ReduceOnReceiveIsRefused) {
  Pair p = makePair();
  float x = 1, y = 0;
  size_t n = 0;
  ASSERT_TRUE(p.low->trySend(&x, sizeof x, &n).ok());
  const RecvReduce sum{reduce::reduceFunction(rinaFloat32, rinaSum), &x, sizeof x};
  Status s = p.high->tryRecv(&y, sizeof y, sum, &n);
  EXPECT_EQ(s.code(), rinaInternalError);
}

// Sender and receiver on two threads, each sleeping in a WaitSet when it
// cannot move (as the engine does): a frame published while the other side
// goes to sleep must wake it (else this takes 100 ms per lost wake-up and
// misses its deadline).
TEST_P(ShmFramesBySize, TwoThreadsSleepAndWake) {
  Pair p = makePair(GetParam());
  const int kMessages = 3000;
  std::vector<size_t> sizes(kMessages);
  std::mt19937 gen(11);
  for (size_t& len : sizes) len = 1 + gen() % (2 * kFifoBytes);
  auto byteOf = [](int m, size_t i) { return static_cast<uint8_t>(m * 131 + i * 7); };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  auto wait = [](ShmFrameConnection& c, bool send) {
    WaitSet ws;
    c.armWait(ws, send, !send);
    ws.wait(100);
  };
  std::thread producer([&] {
    std::vector<uint8_t> msg;
    for (int m = 0; m < kMessages && std::chrono::steady_clock::now() < deadline; ++m) {
      msg.resize(sizes[m]);
      for (size_t i = 0; i < msg.size(); ++i) msg[i] = byteOf(m, i);
      size_t done = 0;
      while (done < msg.size() && std::chrono::steady_clock::now() < deadline) {
        const size_t n = sendSome(*p.low, msg.data() + done, msg.size() - done);
        done += n;
        if (n == 0) wait(*p.low, true);
      }
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
    if (done < got.size()) break;
    for (size_t i = 0; i < got.size(); ++i) wrong += got[i] != byteOf(m, i);
    ++received;
  }
  producer.join();
  EXPECT_EQ(received, kMessages) << "messages received within 60 s";
  EXPECT_EQ(wrong, 0u) << "bytes that differ from what was sent";
}

INSTANTIATE_TEST_SUITE_P(Fifo, ShmFramesBySize, ::testing::Values(kFifoBytes, kLappingFifoBytes));

}  // namespace
}  // namespace rina::transport
