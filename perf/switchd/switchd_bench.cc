// rina-switchd-bench: aggregation throughput of rina-switchd on this host.
// Starts a switchd on loopback, registers one job of W workers (threads, each
// with its own InaClient and UDP socket) and has every worker stream a buffer
// through the switch, ITERS times. Reports contributions summed per second
// and payload Gbit/s into the switch (W x bytes per call / time), plus
// retransmissions. Usage:
//   rina-switchd-bench [--workers 4] [--payload 1024] [--elems 1048576]
//       [--iters 5] [--window 256] [--dtype int32|float32] [--threads 1]
//       [--drop-rate 0] [--capacity-pps 0] [--min-rto-us 1000]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ina_harness.h"

namespace {

using rina::ina::testing::Rack;
using rina::ina::testing::RackOptions;
using rina::ina::testing::SwitchdProcess;

struct Args {
  int workers = 4;
  int payload = 1024;
  size_t elems = 1 << 20;
  int iters = 5;
  int window = 256;
  std::string dtype = "int32";
  int threads = 1;
  std::string dropRate = "0";
  std::string capacityPps = "0";
  int minRtoUs = 1000;
};

bool parse(int argc, char** argv, Args* a) {
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--workers")
      a->workers = std::atoi(v.c_str());
    else if (k == "--payload")
      a->payload = std::atoi(v.c_str());
    else if (k == "--elems")
      a->elems = std::strtoull(v.c_str(), nullptr, 10);
    else if (k == "--iters")
      a->iters = std::atoi(v.c_str());
    else if (k == "--window")
      a->window = std::atoi(v.c_str());
    else if (k == "--dtype")
      a->dtype = v;
    else if (k == "--threads")
      a->threads = std::atoi(v.c_str());
    else if (k == "--drop-rate")
      a->dropRate = v;
    else if (k == "--capacity-pps")
      a->capacityPps = v;
    else if (k == "--min-rto-us")
      a->minRtoUs = std::atoi(v.c_str());
    else
      return false;
  }
  return (argc % 2) == 1 && a->workers >= 1 && a->workers <= 32 && a->payload >= 1 &&
         a->iters >= 1 && (a->dtype == "int32" || a->dtype == "float32");
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!parse(argc, argv, &a)) {
    fprintf(stderr, "usage: see the comment at the top of perf/switchd/switchd_bench.cc\n");
    return 2;
  }
  SwitchdProcess sw({"--slots", std::to_string(a.window * 2), "--payload",
                     std::to_string(a.payload), "--threads", std::to_string(a.threads),
                     "--drop-rate", a.dropRate, "--capacity-pps", a.capacityPps, "--seed", "11"});
  if (!sw.ready()) {
    fprintf(stderr, "rina-switchd-bench: switchd did not start\n");
    return 1;
  }
  RackOptions ro;
  ro.slots = static_cast<uint32_t>(a.window);
  ro.client.minRtoUs = a.minRtoUs;
  ro.client.socketBufferBytes = 16 << 20;
  std::unique_ptr<Rack> rack;
  rina::Status s = Rack::create(sw, a.workers, ro, &rack);
  if (!s.ok()) {
    fprintf(stderr, "rina-switchd-bench: %s\n", s.message().c_str());
    return 1;
  }
  rinaDataType_t type = a.dtype == "int32" ? rinaInt32 : rinaFloat32;
  std::vector<std::vector<uint8_t>> bufs(a.workers, std::vector<uint8_t>(a.elems * 4));
  for (int w = 0; w < a.workers; ++w) {
    for (size_t i = 0; i < a.elems; ++i) {
      float f = static_cast<float>((i % 1000) * 0.001 + w);
      int32_t v = static_cast<int32_t>(i % 1000) + w;
      std::memcpy(bufs[w].data() + 4 * i, type == rinaInt32 ? static_cast<void*>(&v) : &f, 4);
    }
  }
  std::vector<rina::Status> st;
  std::vector<rina::ina::InaCallResult> res;
  rack->allreduce(bufs, a.elems, type, &st, &res);  // warm-up
  uint64_t retx = 0, fast = 0, sent = 0, host = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (int it = 0; it < a.iters; ++it) {
    rack->allreduce(bufs, a.elems, type, &st, &res);
    for (int w = 0; w < a.workers; ++w) {
      if (!st[w].ok()) {
        fprintf(stderr, "rina-switchd-bench: %s\n", st[w].message().c_str());
        return 1;
      }
      retx += res[w].stats.retransmissions;
      fast += res[w].stats.fastRetransmissions;
      sent += res[w].stats.datagramsSent;
      host += res[w].hostSlices.size();
    }
  }
  double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double slices = static_cast<double>(res[0].stats.slices) * a.iters;
  double contributions = slices * a.workers;
  double payloadBits = contributions * a.payload * 32.0;
  double goodputBits = static_cast<double>(a.elems) * 32.0 * a.iters;  // per worker, result bytes
  printf(
      "workers=%d payload=%d dtype=%s threads=%d window=%d drop=%s elems=%zu iters=%d: "
      "%.3f s, %.0f contributions/s, %.3f Gbit/s payload in (aggregate), "
      "%.3f Gbit/s goodput per worker, retransmissions %.2f%% of %llu sends (%.2f%% fast), host "
      "slices %llu, "
      "switch injected drops %lld\n",
      a.workers, a.payload, a.dtype.c_str(), a.threads, a.window, a.dropRate.c_str(), a.elems,
      a.iters, sec, contributions / sec, payloadBits / sec / 1e9, goodputBits / sec / 1e9,
      sent ? 100.0 * retx / sent : 0.0, static_cast<unsigned long long>(sent),
      sent ? 100.0 * fast / sent : 0.0, static_cast<unsigned long long>(host),
      sw.statsField("injected_drops"));
  return 0;
}
