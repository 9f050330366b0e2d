// Reduction kernel throughput against memcpy of the same buffer size.
//
//   reduce_bench [--min-time=SECONDS] [--sizes=MiB,MiB,...]
//
// For each size: memcpy(dst, a) and dst = a + b for float32, float16 and
// bfloat16 with every kernel table this CPU runs (scalar, avx2). GB/s is
// buffer bytes per second (one buffer of the given size per call, 1e9 bytes
// per GB); "traffic" counts the bytes that cross the memory interface: read
// a + write dst for memcpy, read a + read b + write dst for the kernels.
// Each case runs for --min-time seconds in batches of ~10 ms; the table shows
// the best batch (what the code can do when the shared machine lets it) and
// the median batch.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "reduce/kernels.h"
#include "reduce/reduce.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  double minSeconds = 0.5;
  std::vector<size_t> sizesMiB = {1, 64};
};

Options parseOptions(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--min-time=", 0) == 0) {
      options.minSeconds = std::atof(arg.c_str() + 11);
    } else if (arg.rfind("--sizes=", 0) == 0) {
      options.sizesMiB.clear();
      const std::string list = arg.substr(8);
      for (size_t pos = 0; pos < list.size();) {
        const size_t comma = std::min(list.find(',', pos), list.size());
        options.sizesMiB.push_back(std::stoull(list.substr(pos, comma - pos)));
        pos = comma + 1;
      }
    } else {
      std::fprintf(stderr, "usage: %s [--min-time=SECONDS] [--sizes=MiB,MiB,...]\n", argv[0]);
      std::exit(2);
    }
  }
  return options;
}

struct Timing {
  double best;  // seconds per call
  double median;
};

Timing secondsPerCall(const std::function<void()>& call, double minSeconds) {
  call();  // warm caches and page tables
  const auto t0 = Clock::now();
  call();
  const double once = std::chrono::duration<double>(Clock::now() - t0).count();
  const int perBatch = std::max(1, static_cast<int>(0.01 / std::max(once, 1e-9)));
  std::vector<double> batches;
  const auto start = Clock::now();
  while (batches.size() < 5 ||
         std::chrono::duration<double>(Clock::now() - start).count() < minSeconds) {
    const auto b0 = Clock::now();
    for (int k = 0; k < perBatch; ++k) call();
    batches.push_back(std::chrono::duration<double>(Clock::now() - b0).count() / perBatch);
  }
  std::sort(batches.begin(), batches.end());
  return {batches.front(), batches[batches.size() / 2]};
}

// Ordinary values: no NaN, infinity or subnormal to take a slow path.
void fillInputs(rinaDataType_t type, std::vector<unsigned char>& a, std::vector<unsigned char>& b) {
  const size_t count = a.size() / rina::reduce::dataTypeSize(type);
  for (size_t i = 0; i < count; ++i) {
    const float x = 1.0f + static_cast<float>(i % 1000) / 1000.0f;
    const float y = 0.5f - static_cast<float>(i % 777) / 2000.0f;
    if (type == rinaFloat32) {
      std::memcpy(&a[i * 4], &x, 4);
      std::memcpy(&b[i * 4], &y, 4);
    } else {
      const bool half = type == rinaFloat16;
      const uint16_t hx = half ? rina::reduce::floatToHalf(x) : rina::reduce::floatToBf16(x);
      const uint16_t hy = half ? rina::reduce::floatToHalf(y) : rina::reduce::floatToBf16(y);
      std::memcpy(&a[i * 2], &hx, 2);
      std::memcpy(&b[i * 2], &hy, 2);
    }
  }
}

void printRow(const char* what, const char* isa, size_t mib, Timing timing, double bytes,
              int buffersMoved, Timing memcpyTiming) {
  const double best = bytes / timing.best / 1e9;
  const double median = bytes / timing.median / 1e9;
  std::printf("| %s | %s | %zu MiB | %.1f | %.1f | %.1f | %.2f |\n", what, isa, mib, best, median,
              best * buffersMoved, memcpyTiming.best / timing.best);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parseOptions(argc, argv);
  std::vector<const rina::reduce::detail::KernelTable*> tables = {
      &rina::reduce::detail::scalarKernels()};
  if (rina::reduce::detail::avx2Kernels() != nullptr) {
    tables.push_back(rina::reduce::detail::avx2Kernels());
  }
  std::printf("reduce kernels: %s dispatched; dst = a + b out of place; %.2f s per case\n\n",
              rina::reduce::kernelIsaName(), options.minSeconds);
  std::printf(
      "| case | isa | size | GB/s best | GB/s median | traffic GB/s best | vs memcpy best |\n"
      "|------|-----|------|----------:|------------:|------------------:|---------------:|\n");
  for (size_t mib : options.sizesMiB) {
    const size_t bytes = mib << 20;
    std::vector<unsigned char> a(bytes, 1), b(bytes, 2), dst(bytes, 0);
    const Timing memcpyTiming =
        secondsPerCall([&] { std::memcpy(dst.data(), a.data(), bytes); }, options.minSeconds);
    printRow("memcpy", "libc", mib, memcpyTiming, static_cast<double>(bytes), 2, memcpyTiming);
    for (rinaDataType_t type : {rinaFloat32, rinaFloat16, rinaBfloat16}) {
      fillInputs(type, a, b);
      const size_t count = bytes / rina::reduce::dataTypeSize(type);
      const std::string what = std::string(rina::reduce::dataTypeName(type)) + " sum";
      for (const auto* table : tables) {
        const rina::reduce::ReduceFn fn = table->reduce[type][rina::reduce::detail::kKernelSum];
        const Timing timing =
            secondsPerCall([&] { fn(dst.data(), a.data(), b.data(), count); }, options.minSeconds);
        printRow(what.c_str(), table->isa, mib, timing, static_cast<double>(bytes), 3,
                 memcpyTiming);
      }
    }
  }
  return 0;
}
