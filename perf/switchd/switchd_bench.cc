// rina-switchd-bench: aggregation throughput and cost of rina-switchd on
// this host. Starts a switchd on loopback, registers one job of W workers
// (threads, each with its own InaClient and UDP socket) and has every worker
// stream a buffer through the switch, ITERS times (each from the same input:
// a sum fed back would overflow int32 and go to the hosts). Reports
// contributions summed per second and payload Gbit/s into the switch (W x
// bytes per call / time); the switch's own CPU time over the timed calls
// (its STATS: getrusage of the switch process), as payload summed per
// CPU-second of the switch and CPU per datagram received; and what the
// retransmissions were: first sends, resends (by timeout, fast), answers
// that came twice (the first copy was only late), the switch's duplicates
// (a resend of a contribution it already had, while its slot waited or
// after it completed), drops at the sockets (the switch's and the
// workers'), and the workers' congestion windows (cuts, the smallest).
// Usage:
//   rina-switchd-bench [--workers 4] [--payload 1024] [--elems 1048576]
//       [--iters 5] [--window 256] [--dtype int32|float32] [--threads 1]
//       [--drop-rate 0] [--capacity-pps 0] [--min-rto-us 1000]
//       [--no-window 0|1] [--switchd-args "..."] [--switchd PATH]
// --switchd runs another build's rina-switchd (an A/B of two switches under
// the same workers); a switch whose STATS has no CPU time (older builds) is
// timed from /proc/PID/stat.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
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
  bool noWindow = false;
  std::string switchdArgs;
  std::string switchd;
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
    else if (k == "--no-window")
      a->noWindow = v == "1";
    else if (k == "--switchd-args")
      a->switchdArgs = v;
    else if (k == "--switchd")
      a->switchd = v;
    else
      return false;
  }
  return (argc % 2) == 1 && a->workers >= 1 && a->workers <= 32 && a->payload >= 1 &&
         a->iters >= 1 && (a->dtype == "int32" || a->dtype == "float32");
}

// The switch's counters the report needs, from one STATS query.
struct SwitchCounters {
  long long contributions = 0, received = 0, receiveMessages = 0, sent = 0, sendMessages = 0,
            duplicatePending = 0, duplicateResent = 0, socketDrops = 0, cpuUs = 0, procCpuUs = 0;
};

long long field(const std::string& json, const std::string& name) {
  size_t p = json.find("\"" + name + "\":");
  return p == std::string::npos ? -1 : std::atoll(json.c_str() + p + name.size() + 3);
}

// utime + stime of a process, in microseconds (/proc/PID/stat).
long long procCpuUs(pid_t pid) {
  FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (!f) return -1;
  char buf[1024];
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = 0;
  const char* p = std::strrchr(buf, ')');
  long long utime = 0, stime = 0;
  // Fields after the comm: state is field 3; utime and stime are 14 and 15.
  // At step `field`, p is at the space before that field.
  for (int field = 3; p && field <= 15; ++field) {
    p = std::strchr(p + 1, ' ');
    if (p && field == 14) utime = std::atoll(p + 1);
    if (p && field == 15) stime = std::atoll(p + 1);
  }
  return (utime + stime) * 1000000 / sysconf(_SC_CLK_TCK);
}

SwitchCounters readSwitch(const SwitchdProcess& sw) {
  const std::string j = sw.query("STATS");
  SwitchCounters c;
  c.contributions = field(j, "contributions");
  c.received = field(j, "received");
  c.receiveMessages = field(j, "receive_messages");
  c.sent = field(j, "sent");
  c.sendMessages = field(j, "send_messages");
  c.duplicatePending = field(j, "duplicate_pending");
  c.duplicateResent = field(j, "duplicate_resent");
  c.socketDrops = field(j, "socket_drops");
  c.cpuUs = field(j, "cpu_user_us") + field(j, "cpu_system_us");
  c.procCpuUs = procCpuUs(sw.pid());
  if (field(j, "cpu_user_us") < 0) c.cpuUs = c.procCpuUs;
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!parse(argc, argv, &a)) {
    fprintf(stderr, "usage: see the comment at the top of perf/switchd/switchd_bench.cc\n");
    return 2;
  }
  std::vector<std::string> flags = {"--slots",        std::to_string(a.window * 2),
                                    "--payload",      std::to_string(a.payload),
                                    "--threads",      std::to_string(a.threads),
                                    "--drop-rate",    a.dropRate,
                                    "--capacity-pps", a.capacityPps,
                                    "--seed",         "11"};
  std::istringstream extra(a.switchdArgs);
  for (std::string f; extra >> f;) flags.push_back(f);
  // Another switch binary: a shell in front of the harness's one drops it.
  const std::vector<std::string> launcher =
      a.switchd.empty()
          ? std::vector<std::string>{}
          : std::vector<std::string>{"sh", "-c", "shift; exec \"$0\" \"$@\"", a.switchd};
  SwitchdProcess sw(flags, launcher);
  if (!sw.ready()) {
    fprintf(stderr, "rina-switchd-bench: switchd did not start\n");
    return 1;
  }
  RackOptions ro;
  ro.slots = static_cast<uint32_t>(a.window);
  ro.client.minRtoUs = a.minRtoUs;
  ro.client.socketBufferBytes = 16 << 20;
  ro.client.congestionWindow = !a.noWindow;
  std::unique_ptr<Rack> rack;
  rina::Status s = Rack::create(sw, a.workers, ro, &rack);
  if (!s.ok()) {
    fprintf(stderr, "rina-switchd-bench: %s\n", s.message().c_str());
    return 1;
  }
  rinaDataType_t type = a.dtype == "int32" ? rinaInt32 : rinaFloat32;
  std::vector<std::vector<uint8_t>> inputs(a.workers, std::vector<uint8_t>(a.elems * 4));
  for (int w = 0; w < a.workers; ++w) {
    for (size_t i = 0; i < a.elems; ++i) {
      float f = static_cast<float>((i % 1000) * 0.001 + w);
      int32_t v = static_cast<int32_t>(i % 1000) + w;
      std::memcpy(inputs[w].data() + 4 * i, type == rinaInt32 ? static_cast<void*>(&v) : &f, 4);
    }
  }
  std::vector<std::vector<uint8_t>> bufs = inputs;
  std::vector<rina::Status> st;
  std::vector<rina::ina::InaCallResult> res;
  rack->allreduce(bufs, a.elems, type, &st, &res);  // warm-up
  rina::ina::InaCallStats total;
  uint64_t host = 0;
  uint32_t smallestWindow = UINT32_MAX;
  double sec = 0;
  const SwitchCounters before = readSwitch(sw);
  for (int it = 0; it < a.iters; ++it) {
    bufs = inputs;
    auto t0 = std::chrono::steady_clock::now();
    rack->allreduce(bufs, a.elems, type, &st, &res);
    sec += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (int w = 0; w < a.workers; ++w) {
      if (!st[w].ok()) {
        fprintf(stderr, "rina-switchd-bench: %s\n", st[w].message().c_str());
        return 1;
      }
      const rina::ina::InaCallStats& c = res[w].stats;
      rina::ina::addCounts(c, &total);
      smallestWindow = std::min(smallestWindow, c.smallestWindow);
      host += res[w].hostSlices.size();
    }
  }
  const SwitchCounters after = readSwitch(sw);
  const double contributions = static_cast<double>(after.contributions - before.contributions);
  const double received = static_cast<double>(after.received - before.received);
  const double switchCpu = static_cast<double>(after.cpuUs - before.cpuUs) / 1e6;
  const double payloadBits = contributions * a.payload * 32.0;
  const double goodputBits = static_cast<double>(a.elems) * 32.0 * a.iters;  // per worker
  const double sent = static_cast<double>(total.datagramsSent);
  auto pct = [&](double n) { return sent > 0 ? 100.0 * n / sent : 0.0; };
  printf(
      "workers=%d payload=%d dtype=%s threads=%d window=%d drop=%s elems=%zu iters=%d: "
      "%.3f s, %.0f contributions/s, %.3f Gbit/s payload in (aggregate), "
      "%.3f Gbit/s goodput per worker, retransmissions %.2f%% of %llu sends (%.2f%% fast), host "
      "slices %llu, switch injected drops %lld\n",
      a.workers, a.payload, a.dtype.c_str(), a.threads, a.window, a.dropRate.c_str(), a.elems,
      a.iters, sec, contributions / sec, payloadBits / sec / 1e9, goodputBits / sec / 1e9,
      pct(static_cast<double>(total.retransmissions)),
      static_cast<unsigned long long>(total.datagramsSent),
      pct(static_cast<double>(total.fastRetransmissions)), static_cast<unsigned long long>(host),
      sw.statsField("injected_drops"));
  printf(
      "  switch cpu %.3f s (%.3f s in /proc/PID/stat): %.2f Gbit/s payload summed per switch "
      "core, %.0f ns per datagram received (%.1f datagrams per receive message, %.1f per send "
      "message)\n",
      switchCpu, static_cast<double>(after.procCpuUs - before.procCpuUs) / 1e6,
      switchCpu > 0 ? payloadBits / switchCpu / 1e9 : 0.0,
      received > 0 ? switchCpu * 1e9 / received : 0.0,
      received / std::max(1.0, static_cast<double>(after.receiveMessages - before.receiveMessages)),
      static_cast<double>(after.sent - before.sent) /
          std::max(1.0, static_cast<double>(after.sendMessages - before.sendMessages)));
  printf(
      "  resends %llu (%.3f%% of first sends): by timeout %llu, fast %llu; late answers %llu; "
      "switch duplicates pending %lld, after completion %lld (late-only resends %.3f%% of "
      "sends); socket drops switch %lld workers %llu; window cuts %llu (undone %llu), smallest "
      "window %u\n",
      static_cast<unsigned long long>(total.retransmissions),
      pct(static_cast<double>(total.retransmissions)),
      static_cast<unsigned long long>(total.retransmissions - total.fastRetransmissions),
      static_cast<unsigned long long>(total.fastRetransmissions),
      static_cast<unsigned long long>(total.lateAnswers),
      after.duplicatePending - before.duplicatePending,
      after.duplicateResent - before.duplicateResent,
      pct(static_cast<double>(after.duplicatePending - before.duplicatePending +
                              after.duplicateResent - before.duplicateResent)),
      after.socketDrops - before.socketDrops, static_cast<unsigned long long>(total.socketDrops),
      static_cast<unsigned long long>(total.windowCuts),
      static_cast<unsigned long long>(total.windowUndos), smallestWindow);
  return 0;
}
