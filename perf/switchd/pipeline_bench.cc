// rina-pipeline-bench: the switch's user-space cost per datagram alone,
// rina-switchd's Pipeline::process with no sockets, so that a change to the
// summing shows in a figure the kernel's socket path does not drown.
// W workers send the slices of a call to a switch of 2 x window slots, in
// bursts of --burst datagrams (a segmented receive's worth), each worker one
// burst behind the previous one, so that about a window of slices is in
// flight (the access pattern of rina-switchd-bench). Each burst's answers
// are dropped after it, as the data thread sends them. The datagrams are
// written into --burst buffers per worker reused round-robin (a receive
// buffer the kernel has just filled is in cache); only their headers change.
// Usage:
//   rina-pipeline-bench [--workers 4] [--payload 1024] [--window 64]
//       [--burst 16] [--slices 200000] [--repeats 5]
// Prints per repeat the ns per datagram of process() and the CPU time of
// the thread (getrusage RUSAGE_THREAD).
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench_common.h"
#include "rina/ina_wire.h"
#include "switchd/pipeline.h"
#include "wire/wire_kernels.h"

namespace {

using rina::ina::Header;
using rina::switchd::Endpoint;
using rina::switchd::JobEntry;
using rina::switchd::Output;
using rina::switchd::Pipeline;
using rina::switchd::PipelineConfig;
using rina::switchd::threadCpuSeconds;

struct Args {
  int workers = 4;
  int payload = 1024;
  int window = 64;
  int burst = 16;
  long slices = 200000;
  int repeats = 5;
};

}  // namespace

int main(int argc, char** argv) {
  Args a;
  rina::switchd::FlagParser p("rina-pipeline-bench");
  p.addNumber("--workers", &a.workers, 1, 32);
  p.addNumber("--payload", &a.payload, 1, static_cast<int>(rina::ina::kMaxPayloadElems));
  p.addNumber("--window", &a.window, 1, 4096);
  p.addNumber("--burst", &a.burst, 1, 1024);
  p.addNumber("--slices", &a.slices, 1L);
  p.addNumber("--repeats", &a.repeats, 1, 1000);
  if (!rina::switchd::parseBenchFlags(
          p, argc, argv,
          "usage: rina-pipeline-bench [--workers 4] [--payload 1024] "
          "[--window 64] [--burst 16] [--slices 200000] [--repeats 5]")) {
    return 2;
  }
  constexpr uint16_t kJob = 1;
  constexpr uint64_t kToken = 0x0123456789ABCDEFull;
  const uint32_t slots = 2 * static_cast<uint32_t>(a.window);
  Pipeline pipeline(PipelineConfig{slots, static_cast<uint32_t>(a.payload), 0, 1});
  JobEntry job{kJob, kToken, static_cast<uint8_t>(a.workers), {}};
  for (int w = 0; w < a.workers; ++w) {
    job.members.push_back(Endpoint{0x7F000001, static_cast<uint16_t>(20000 + w)});
  }
  pipeline.installJob(job);
  pipeline.assignSlots(0, slots, kJob);

  // --burst datagrams per worker, payloads of small random values (sums
  // never saturate), headers rewritten per slice.
  std::mt19937 rng(1);
  std::vector<int32_t> values(static_cast<size_t>(a.payload));
  const size_t bytes = rina::ina::kHeaderBytes + 4 * values.size();
  std::vector<std::vector<uint8_t>> buffers(static_cast<size_t>(a.workers * a.burst));
  for (auto& b : buffers) {
    for (int32_t& v : values) v = static_cast<int32_t>(rng() % 2001) - 1000;
    b.resize(bytes);
    Header h;
    h.type = rina::ina::Type::kData;
    h.job = kJob;
    h.fanIn = static_cast<uint8_t>(a.workers);
    h.elems = static_cast<uint16_t>(a.payload);
    h.token = kToken;
    if (rina::ina::encode(h, values, b) != bytes) return 1;
  }
  std::printf("workers=%d payload=%d window=%d burst=%d slices=%ld, payload kernels %s\n",
              a.workers, a.payload, a.window, a.burst, a.slices, rina::ina::wireKernelIsa());

  Output out;
  uint32_t seq = 1;
  for (int rep = 0; rep < a.repeats; ++rep) {
    const long bursts = (a.slices + a.burst - 1) / a.burst;
    uint64_t datagrams = 0;
    const double cpu0 = threadCpuSeconds();
    const auto t0 = std::chrono::steady_clock::now();
    // Worker w sends burst t - w at step t: about workers x burst slices
    // in flight.
    for (long t = 0; t < bursts + a.workers - 1; ++t) {
      for (int w = 0; w < a.workers; ++w) {
        const long b = t - w;
        if (b < 0 || b >= bursts) continue;
        out.clear();
        for (int i = 0; i < a.burst; ++i) {
          const uint32_t slice = static_cast<uint32_t>(b * a.burst + i);
          Header h;
          h.type = rina::ina::Type::kData;
          h.job = kJob;
          h.slot = static_cast<uint16_t>(slice % slots);
          h.shadow = (slice / slots) % 2 == 1;
          h.worker = static_cast<uint8_t>(w);
          h.fanIn = static_cast<uint8_t>(a.workers);
          h.seq = seq + slice;
          h.elems = static_cast<uint16_t>(a.payload);
          h.token = kToken;
          std::vector<uint8_t>& d = buffers[static_cast<size_t>(w * a.burst + i)];
          rina::ina::encodeHeader(h, d);
          pipeline.process(d, job.members[static_cast<size_t>(w)], 1, &out);
          ++datagrams;
        }
      }
    }
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double cpu = threadCpuSeconds() - cpu0;
    seq += static_cast<uint32_t>(bursts * a.burst);
    std::printf("repeat %d: %.1f ns per datagram (wall), %.1f ns per datagram (thread cpu)\n", rep,
                wall * 1e9 / static_cast<double>(datagrams),
                cpu * 1e9 / static_cast<double>(datagrams));
  }
  const auto& stats = pipeline.stats();
  const uint64_t completed =
      stats.verdicts[static_cast<size_t>(rina::switchd::Verdict::kCompleted)].get();
  const uint64_t want = static_cast<uint64_t>((a.slices + a.burst - 1) / a.burst) *
                        static_cast<uint64_t>(a.burst) * static_cast<uint64_t>(a.repeats);
  if (completed != want) {
    std::fprintf(stderr, "completed %llu slices, expected %llu\n",
                 static_cast<unsigned long long>(completed), static_cast<unsigned long long>(want));
    return 1;
  }
  return 0;
}
