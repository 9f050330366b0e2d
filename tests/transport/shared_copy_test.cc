// A block copied by two sides at once (transport/cma.h): a reader and a
// writer claiming chunks of one job, checked against the source bytes for
// blocks with a ragged last chunk and unaligned ends; a chunk the writer
// cannot copy is left to the reader; a writer holding an older job's plan
// takes nothing from a newer job; a reader whose writer never finishes its
// chunk keeps waiting (no false "finished"). Both sides run in this
// process (process_vm_readv / writev on its own pid), on two threads.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "transport/cma.h"

namespace rina::transport {
namespace {

uint64_t addressOf(const void* p) { return reinterpret_cast<uintptr_t>(p); }

std::vector<char> pattern(size_t bytes, int seed) {
  std::vector<char> v(bytes);
  for (size_t i = 0; i < bytes; ++i) v[i] = static_cast<char>(i * 7 + seed + (i >> 12));
  return v;
}

// The reader side of a whole job: its chunks, then waiting for the writer's.
void readToTheEnd(SharedCopyWords& w, const SharedCopyPlan& plan, const char* src, char* dst) {
  ASSERT_TRUE(readSharedChunks(w, plan, getpid(), addressOf(src), dst).ok());
  bool finished = false;
  for (long spins = 0; !finished && spins < 2000000000L; ++spins) {
    ASSERT_TRUE(sharedCopyFinished(w, plan, getpid(), addressOf(src), dst, &finished).ok());
  }
  EXPECT_TRUE(finished);
}

TEST(SharedCopy, BothSidesCopyEveryByteOnce) {
  for (size_t bytes : {size_t{1} << 20, (size_t{3} << 20) + 1, (size_t{5} << 20) - 3}) {
    // Unaligned: the block starts 3 bytes into its buffer on both sides.
    std::vector<char> srcBuf = pattern(bytes + 3, static_cast<int>(bytes)), dstBuf(bytes + 3, 0);
    const char* src = srcBuf.data() + 3;
    char* dst = dstBuf.data() + 3;
    SharedCopyWords w{};
    // The reader has the first 256 KiB already (as the point-to-point
    // receiver does before it shares).
    const SharedCopyPlan plan{.job = 9, .from = 256 << 10, .bytes = bytes, .chunk = 256 << 10};
    std::memcpy(dst, src, plan.from);
    openSharedCopy(w, plan);
    std::thread writer([&] { writeSharedChunks(w, plan, src, getpid(), addressOf(dst)); });
    readToTheEnd(w, plan, src, dst);
    writer.join();
    EXPECT_EQ(w.done.load(), plan.chunks());
    EXPECT_TRUE(std::memcmp(dst, src, bytes) == 0) << bytes << " bytes";
    EXPECT_EQ(dstBuf[0], 0) << "a byte before the block was written";
  }
}

TEST(SharedCopy, AChunkTheWriterCannotCopyIsLeftToTheReader) {
  const size_t bytes = 2 << 20;
  std::vector<char> srcBuf = pattern(bytes, 1), dstBuf(bytes, 0);
  SharedCopyWords w{};
  const SharedCopyPlan plan{.job = 3, .from = 0, .bytes = bytes, .chunk = 256 << 10};
  openSharedCopy(w, plan);
  // The writer names a destination the kernel refuses (address 0): its
  // first chunk fails, it marks it and stops helping.
  writeSharedChunks(w, plan, srcBuf.data(), getpid(), 0);
  EXPECT_EQ(w.failed.load(), 1u) << "the writer's first chunk (0) is marked failed";
  readToTheEnd(w, plan, srcBuf.data(), dstBuf.data());
  EXPECT_TRUE(dstBuf == srcBuf);
}

TEST(SharedCopy, AWriterOfAnOlderJobTakesNothing) {
  const size_t bytes = 1 << 20;
  std::vector<char> srcBuf = pattern(bytes, 2), dstBuf(bytes, 0), stale(bytes, 0x55);
  SharedCopyWords w{};
  const SharedCopyPlan older{.job = 4, .from = 0, .bytes = bytes, .chunk = 256 << 10};
  const SharedCopyPlan newer{.job = 5, .from = 0, .bytes = bytes, .chunk = 256 << 10};
  openSharedCopy(w, newer);
  writeSharedChunks(w, older, stale.data(), getpid(), addressOf(dstBuf.data()));
  EXPECT_EQ(w.done.load(), 0u);
  readToTheEnd(w, newer, srcBuf.data(), dstBuf.data());
  EXPECT_TRUE(dstBuf == srcBuf);
}

TEST(SharedCopy, AClaimedChunkNotDoneIsNotFinished) {
  const size_t bytes = 1 << 20;
  std::vector<char> srcBuf = pattern(bytes, 3), dstBuf(bytes, 0);
  SharedCopyWords w{};
  const SharedCopyPlan plan{.job = 6, .from = 0, .bytes = bytes, .chunk = 256 << 10};
  openSharedCopy(w, plan);
  // A writer that claimed chunk 0 and died before copying it.
  w.ticket.fetch_add(1);
  ASSERT_TRUE(readSharedChunks(w, plan, getpid(), addressOf(srcBuf.data()), dstBuf.data()).ok());
  bool finished = true;
  ASSERT_TRUE(
      sharedCopyFinished(w, plan, getpid(), addressOf(srcBuf.data()), dstBuf.data(), &finished)
          .ok());
  EXPECT_FALSE(finished) << "chunk 0 was never copied";
  EXPECT_EQ(w.done.load(), plan.chunks() - 1);
}

}  // namespace
}  // namespace rina::transport
