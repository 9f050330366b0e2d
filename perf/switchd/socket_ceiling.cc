// rina-socket-ceiling: what the kernel's UDP socket path alone costs per
// byte on this machine, the ceiling of a switch built on sockets as
// rina-switchd is. A reflector thread does rina-switchd's I/O and nothing
// else: batched receives with UDP_GRO, and for every datagram one reply of
// the same size to its sender, sent from the receive buffer in segmented
// runs per destination (lib/wire/udp_batch.h, the switch's own code),
// no decoding, no summing, no copy of its own. W worker threads keep a
// window of datagrams in flight to it, as rina-switchd-bench's workers do.
// The reflector's CPU time (getrusage RUSAGE_THREAD) over the run gives
// payload Gbit/s per core and ns per datagram, to set beside
// rina-switchd-bench's "Gbit/s payload summed per switch core".
// Usage:
//   rina-socket-ceiling [--workers 4] [--payload 1024] [--window 64]
//       [--datagrams 400000]
// (--payload in int32 elements, plus the 24-byte INA header, as the switch's
// datagrams; --datagrams in all, over the workers.)
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bench_common.h"
#include "rina/ina_wire.h"
#include "wire/net.h"
#include "wire/udp_batch.h"

namespace {

using rina::Fd;
using rina::ina::Endpoint;
using rina::ina::UdpBatchReceiver;
using rina::ina::UdpBatchSender;
using rina::ina::UdpOut;
using rina::switchd::threadCpuSeconds;

struct Args {
  int workers = 4;
  int payload = 1024;
  int window = 64;
  long datagrams = 400000;
};

Fd openSocket(Endpoint* at) {
  Fd fd;
  if (!rina::ina::openUdpSocket(Endpoint{0x7F000001, 0}, 8 << 20, &fd).ok() ||
      !rina::ina::boundEndpoint(fd.get(), at).ok()) {
    std::fprintf(stderr, "rina-socket-ceiling: no UDP socket on loopback\n");
    std::exit(2);
  }
  return fd;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  rina::switchd::FlagParser flags("rina-socket-ceiling");
  flags.addNumber("--workers", &a.workers, 1, 64);
  flags.addNumber("--payload", &a.payload, 1, static_cast<int>(rina::ina::kMaxPayloadElems));
  flags.addNumber("--window", &a.window, 1);
  flags.addNumber("--datagrams", &a.datagrams, 1L);
  if (!rina::switchd::parseBenchFlags(flags, argc, argv,
                                      "usage: rina-socket-ceiling [--workers 4] [--payload 1024] "
                                      "[--window 64] [--datagrams 400000]")) {
    return 2;
  }
  const uint32_t bytes = static_cast<uint32_t>(rina::ina::kHeaderBytes + 4 * a.payload);
  Endpoint reflectorAt;
  Fd reflector = openSocket(&reflectorAt);
  const bool gro = UdpBatchReceiver::enableGro(reflector.get());
  std::atomic<bool> stop{false};
  uint64_t reflected = 0;
  double reflectorCpu = 0;

  std::thread mirror([&] {
    UdpBatchReceiver rx(64, bytes + 4, gro);
    UdpBatchSender tx;
    std::vector<UdpOut> out;
    std::vector<uint32_t> order;
    std::vector<UdpOut> sorted;
    const double cpu0 = threadCpuSeconds();
    while (!stop.load(std::memory_order_relaxed)) {
      pollfd p{reflector.get(), POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      for (int round = 0; round < 64; ++round) {
        const int got = rx.receive(reflector.get());
        if (got <= 0) break;
        out.clear();
        for (const UdpBatchReceiver::Datagram& d : rx.datagrams()) {
          out.push_back({rx.from(d), d.data, d.len});
        }
        // Runs per destination, as rina-switchd sends its answers.
        order.resize(out.size());
        for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
        std::sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) {
          const uint16_t px = out[x].to.sin_port, py = out[y].to.sin_port;
          return px != py ? px < py : x < y;
        });
        sorted.resize(out.size());
        for (size_t i = 0; i < order.size(); ++i) sorted[i] = out[order[i]];
        tx.send(reflector.get(), sorted, 100);
        reflected += out.size();
        if (static_cast<size_t>(got) < rx.batch()) break;
      }
    }
    reflectorCpu = threadCpuSeconds() - cpu0;
  });

  const long perWorker = a.datagrams / a.workers;
  std::vector<std::thread> workers;
  const auto t0 = std::chrono::steady_clock::now();
  for (int w = 0; w < a.workers; ++w) {
    workers.emplace_back([&] {
      Endpoint mine;
      Fd fd = openSocket(&mine);
      UdpBatchReceiver rx(64, bytes + 4, UdpBatchReceiver::enableGro(fd.get()));
      UdpBatchSender tx;
      const std::vector<uint8_t> datagram(bytes, 0x5A);
      std::vector<UdpOut> out;
      long sent = 0, back = 0;
      auto sendUpTo = [&](long inFlight) {
        out.clear();
        while (sent < perWorker && inFlight + static_cast<long>(out.size()) < a.window) {
          out.push_back({reflectorAt.toSockaddr(), datagram.data(), bytes});
          ++sent;
        }
        if (!out.empty()) tx.send(fd.get(), out, 1000);
      };
      sendUpTo(0);
      // A window that loses a datagram (a full buffer) stops: the run then
      // ends on the deadline below, and the report says how many came back.
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (back < perWorker && std::chrono::steady_clock::now() < deadline) {
        pollfd p{fd.get(), POLLIN, 0};
        if (::poll(&p, 1, 100) <= 0) continue;
        for (int got = rx.receive(fd.get()); got > 0; got = rx.receive(fd.get())) {
          back += static_cast<long>(rx.datagrams().size());
        }
        sendUpTo(sent - back);
      }
    });
  }
  for (std::thread& t : workers) t.join();
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  stop = true;
  mirror.join();
  const double payloadBits = static_cast<double>(reflected) * a.payload * 32.0;
  std::printf(
      "workers=%d payload=%d window=%d: %llu datagrams reflected in %.3f s (%.2f Gbit/s payload); "
      "reflector cpu %.3f s: %.2f Gbit/s payload per reflector core, %.0f ns per datagram\n",
      a.workers, a.payload, a.window, static_cast<unsigned long long>(reflected), sec,
      payloadBits / sec / 1e9, reflectorCpu,
      reflectorCpu > 0 ? payloadBits / reflectorCpu / 1e9 : 0,
      reflected ? reflectorCpu * 1e9 / static_cast<double>(reflected) : 0.0);
  return reflected >= static_cast<uint64_t>(perWorker * a.workers) ? 0 : 1;
}
