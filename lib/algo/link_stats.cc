#include "algo/link_stats.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "algo/engine.h"
#include "core/config.h"
#include "core/log.h"

namespace rina::algo {

namespace {
constexpr uint32_t kHeaderMagic = 0x52484452;  // as every collective's header (engine.cc)
constexpr int64_t kMaxProbeBytes = int64_t{64} << 20;
constexpr int kSend = static_cast<int>(transport::Direction::kSend);
constexpr int kRecv = static_cast<int>(transport::Direction::kRecv);

EngineContext contextOf(Communicator& comm, const char* what, uint64_t seq, int64_t timeoutMs) {
  return EngineContext{comm.rank(), what, seq, 1, timeoutMs, comm.abortFlag(), comm.spinUs()};
}
}  // namespace

std::vector<LinkRate> localLinkRates(const Communicator& comm) {
  std::vector<LinkRate> out;
  for (const auto& [peer, conn] : comm.connections()) {
    const transport::LinkCounters& k = conn->counters();
    LinkRate l;
    l.rank = comm.rank();
    l.peer = peer;
    l.bytesSent = k.bytes[kSend];
    l.bytesRecv = k.bytes[kRecv];
    l.sendBusyNs = k.busyNs[kSend];
    l.recvBusyNs = k.busyNs[kRecv];
    l.sendRate = k.rate(transport::Direction::kSend);
    l.recvRate = k.rate(transport::Direction::kRecv);
    std::strncpy(l.kind, conn->kind(), sizeof(l.kind) - 1);
    out.push_back(l);
  }
  return out;
}

Status probeLinks(Communicator& comm, size_t bytes, int64_t timeoutMs) {
  if (bytes == 0 || comm.connections().empty()) return {};
  const std::vector<char> out(bytes, static_cast<char>(comm.rank()));
  char* in = comm.scratch(bytes);
  if (!in) return errorf(rinaSystemError, "rank %d: link probe: cannot allocate %zu bytes", comm.rank(), bytes);
  const Deadline deadline = deadlineAfterMs(timeoutMs);
  // Ascending peers = ascending pairs (min, max): the lowest pending pair
  // always has both ends at it, so the exchanges cannot wait in a cycle.
  for (const auto& [peer, conn] : comm.connections()) {
    Engine e(contextOf(comm, "link probe", 0, std::max<int64_t>(1, msUntil(deadline))));
    e.setDeadline(deadline, "RINA_PROBE_TIMEOUT_MS");
    e.sends().push_back(SendItem{conn.get(), out.data(), bytes, -1, 1, 0});
    e.recvs().push_back(RecvItem{conn.get(), in, bytes, {}, -1, 1, 0, {}});
    Status st = e.run();
    if (!st.ok()) {
      return st.prepend("rank " + std::to_string(comm.rank()) + ": link probe with peer " +
                        std::to_string(peer) + " (" + std::to_string(bytes) +
                        " bytes each way; RINA_PROBE_BYTES must be equal on every rank): ");
    }
  }
  for (const LinkRate& l : localLinkRates(comm)) {
    RINA_INFO("rank %d: link probe with peer %d (%s): %.1f MB/s in, %.1f MB/s out", l.rank,
              l.peer, l.kind, l.recvRate / 1e6, l.sendRate / 1e6);
  }
  return {};
}

Status probeLinksFromConfig(Communicator& comm) {
  const int64_t bytes = config::intValue("RINA_PROBE_BYTES");
  if (bytes < 0 || bytes > kMaxProbeBytes) {
    return errorf(rinaInvalidArgument, "RINA_PROBE_BYTES=%lld: expected 0 (off) to 64M",
                  static_cast<long long>(bytes));
  }
  const int64_t timeoutMs = config::intValue("RINA_PROBE_TIMEOUT_MS");
  if (timeoutMs <= 0) {
    return errorf(rinaInvalidArgument, "RINA_PROBE_TIMEOUT_MS=%lld: expected > 0",
                  static_cast<long long>(timeoutMs));
  }
  return probeLinks(comm, static_cast<size_t>(bytes), timeoutMs);
}

Status gatherLinkRates(Communicator& comm, std::vector<LinkRate>* table) {
  table->clear();
  std::vector<LinkRate> rows = localLinkRates(comm);
  const int n = comm.size(), r = comm.rank();
  const uint64_t seq = comm.nextSeq();
  transport::Connection* up = r + 1 < n ? comm.peer(r + 1) : nullptr;  // rows come from here
  transport::Connection* down = r > 0 ? comm.peer(r - 1) : nullptr;   // and go on to here
  if ((r + 1 < n && !up) || (r > 0 && !down)) {
    return errorf(rinaInternalError, "rank %d: gather link rates: no connection to a ring neighbour", r);
  }
  const CollHeader mine{kHeaderMagic, kGatherLinkRates, 0, 0, 0, seq, 0, 0, 0};
  if (up) {
    // Ranks r+1..n-1 send their rows as a count, then the rows.
    CollHeader theirs{};
    uint64_t count = 0;
    Engine head(contextOf(comm, collectiveName(kGatherLinkRates), seq, comm.timeoutMs()));
    addHeaderExchange(head, mine, &theirs, nullptr, up, r);
    head.recvs().push_back(RecvItem{up, reinterpret_cast<char*>(&count), sizeof(count), {}, -1, 1, 0, {}});
    RINA_TRY(head.run());
    if (count > static_cast<uint64_t>(n) * static_cast<uint64_t>(n)) {
      return errorf(rinaRemoteError, "rank %d: gather link rates: peer %d announced %llu rows", r,
                    r + 1, static_cast<unsigned long long>(count));
    }
    const size_t mineCount = rows.size();
    rows.resize(mineCount + count);
    Engine body(contextOf(comm, collectiveName(kGatherLinkRates), seq, comm.timeoutMs()));
    body.recvs().push_back(RecvItem{up, reinterpret_cast<char*>(rows.data() + mineCount),
                                    count * sizeof(LinkRate), {}, -1, 1, 0, {}});
    RINA_TRY(body.run());
  }
  if (down) {
    const uint64_t count = rows.size();
    Engine e(contextOf(comm, collectiveName(kGatherLinkRates), seq, comm.timeoutMs()));
    addHeaderExchange(e, mine, nullptr, down, nullptr, r);
    e.sends().push_back(SendItem{down, reinterpret_cast<const char*>(&count), sizeof(count), -1, 1, 0});
    e.sends().push_back(SendItem{down, reinterpret_cast<const char*>(rows.data()),
                                 rows.size() * sizeof(LinkRate), -1, 1, 0});
    return e.run();
  }
  std::sort(rows.begin(), rows.end(), [](const LinkRate& a, const LinkRate& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.peer < b.peer;
  });
  *table = std::move(rows);
  return {};
}

void addMeasuredProbes(const std::vector<LinkRate>& table, plan::Network* net) {
  for (const LinkRate& l : table) {
    if (l.bytesRecv == 0 || l.recvRate <= 0) continue;
    const double mbit = l.recvRate * 8 / 1e6;
    auto it = std::find_if(net->probes.begin(), net->probes.end(), [&](const plan::Network::Probe& p) {
      return p.from == l.peer && p.to == l.rank;
    });
    if (it != net->probes.end()) it->mbit = mbit;
    else net->probes.push_back(plan::Network::Probe{l.peer, l.rank, mbit});
  }
}

void addMeasuredHostRates(const std::vector<LinkRate>& table, plan::Network* net) {
  const int n = static_cast<int>(net->hosts.size());
  std::vector<double> in(n, 0), out(n, 0);
  for (const LinkRate& l : table) {
    if (l.bytesRecv == 0 || l.recvRate <= 0 || std::strcmp(l.kind, "shm") == 0) continue;
    if (l.rank < 0 || l.rank >= n || l.peer < 0 || l.peer >= n) continue;
    if (net->hosts[l.rank].rack == net->hosts[l.peer].rack) continue;
    const double mbit = l.recvRate * 8 / 1e6;
    in[l.rank] = std::max(in[l.rank], mbit);
    out[l.peer] = std::max(out[l.peer], mbit);
  }
  for (int h = 0; h < n; ++h) {
    const double measured =
        in[h] > 0 && out[h] > 0 ? std::min(in[h], out[h]) : std::max(in[h], out[h]);
    if (measured <= 0) continue;
    double& link = net->hosts[h].linkMbit;
    link = link > 0 ? std::min(link, measured) : measured;
  }
}

}  // namespace rina::algo
