// rina-switchd: the INA pipeline as a UDP software switch (see
// p4_agent/README.md). Prints one "rina-switchd ready ..." line on stdout
// once it serves, so scripts and tests can read the ports it bound.
#include <linux/filter.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "rina/ina_roce.h"
#include "switchd/control_service.h"
#include "switchd/data_thread.h"

namespace rina::switchd {
namespace {

constexpr int kCommandTimeoutMs = 2000;

constexpr char kProgram[] = "rina-switchd";

struct Flags {
  ina::Endpoint listen{0x7F000001, 9100};
  ControlFlags control;
  uint32_t slots = 8192;
  uint32_t payload = ina::kDefaultPayloadElems;
  double capacityPps = 0;
  double dropRate = 0;
  double sendDropRate = 0;
  uint64_t seed = 1;
  uint32_t threads = 1;
  std::vector<int> cores;
  int rocePort = ina::roce::kUdpPort;  // -1: off
  bool rocePortGiven = false;
  bool roceRaw = false;
};

void usage() {
  fprintf(stderr,
          "usage: rina-switchd [--listen ADDR:PORT] [--control ADDR:PORT] [--slots N]\n"
          "         [--payload ELEMS] [--capacity-pps N] [--drop-rate P] [--send-drop-rate P]\n"
          "         [--seed S] [--stats-interval S] [--threads N | --cores C0,C1,...]\n"
          "         [--idle-ms MS] [--roce-port PORT|off] [--roce-raw]\n"
          "         [--ctrl-max-connections N] [--ctrl-idle-ms MS]\n"
          "         [--auth-file FILE] [--priority-cap P]\n"
          "  --listen        first UDP data port; aggregation thread i uses PORT+i\n"
          "                  (PORT 0: pick a free block)           [127.0.0.1:9100]\n"
          "  --control       TCP control (CTRL) address, port 0 = any  [127.0.0.1:9101]\n"
          "  --slots         aggregator slots, two sets each (<= 32768)        [8192]\n"
          "  --payload       int32 elements per datagram (1..2048)               [64]\n"
          "  --capacity-pps  aggregation capacity in datagrams/s, 0 = unlimited   [0]\n"
          "  --drop-rate     probability of dropping a received datagram          [0]\n"
          "  --send-drop-rate  probability of dropping each datagram it sends,\n"
          "                  every multicast copy on its own                    [0]\n"
          "  --seed          seed of the drop generator                           [1]\n"
          "  --stats-interval  seconds between stats lines on stderr, 0 = off     [0]\n"
          "  --threads       aggregation threads (slot s goes to thread s %% N)    [1]\n"
          "  --cores         one aggregation thread per listed core, pinned\n"
          "  --idle-ms       ESA: a job idle this long may be preempted        [2000]\n"
          "  --ctrl-max-connections  control connections held at once; the one idle\n"
          "                  longest that registered no job gives way to a new one [4096]\n"
          "  --ctrl-idle-ms  a control connection that sends nothing this long is closed\n"
          "                  (unless it registered a job), as is one whose replies\n"
          "                  do not drain this long                          [60000]\n"
          "  --auth-file     the admin secret (16 bytes to 4 KiB, mode 0600): REGISTER,\n"
          "                  RELEASE and ENTRIES must be signed with it (HMAC-SHA256\n"
          "                  over a per-connection challenge and a counter); without\n"
          "                  it anyone who reaches --control may send them\n"
          "  --priority-cap  a REGISTER above this priority must be signed (without\n"
          "                  --auth-file: is refused)                          [255]\n"
          "  --roce-port     UDP port for the RoCEv2 layout (include/rina/ina_roce.h),\n"
          "                  thread i uses PORT+i; 0 = a free block, off = none  [4791]\n"
          "  --roce-raw      RoCEv2 through raw sockets (needs CAP_NET_RAW): the ICRC\n"
          "                  of every frame is checked (bad ones are dropped and\n"
          "                  counted), and UC queue pairs that attach a receive ring\n"
          "                  get their answers written into it by RDMA WRITE\n");
}

// False at --help, or after printing what is wrong.
bool parseFlags(int argc, char** argv, Flags* f) {
  FlagParser p(kProgram);
  addControlFlags(p, &f->control);
  p.addSwitch("--roce-raw", [f] { f->roceRaw = true; });
  p.addValue("--listen", [f](std::string_view v) { return ina::parseEndpoint(v, &f->listen); });
  p.addNumber("--slots", &f->slots, 1u, ina::kMaxSlots);
  p.addNumber("--payload", &f->payload, 1u, ina::kMaxPayloadElems);
  p.addNumber("--capacity-pps", &f->capacityPps, 0.0);
  p.addValue("--drop-rate", [f](std::string_view v) {
    return parseNumber(v, &f->dropRate) && f->dropRate >= 0 && f->dropRate < 1;
  });
  p.addValue("--send-drop-rate", [f](std::string_view v) {
    return parseNumber(v, &f->sendDropRate) && f->sendDropRate >= 0 && f->sendDropRate < 1;
  });
  p.addNumber("--seed", &f->seed, uint64_t{0});
  p.addNumber("--threads", &f->threads, 1u, 64u);
  p.addValue("--roce-port", [f](std::string_view v) {
    f->rocePortGiven = true;
    if (v == "off") {
      f->rocePort = -1;
      return true;
    }
    return parseNumber(v, &f->rocePort) && f->rocePort >= 0 && f->rocePort <= 65535;
  });
  p.addValue("--cores", [f](std::string_view v) {
    f->cores.clear();
    bool ok = true;
    size_t pos = 0;
    while (ok && pos <= v.size()) {
      size_t end = std::min(v.find(',', pos), v.size());
      int core = -1;
      ok = parseNumber(v.substr(pos, end - pos), &core) && core >= 0;
      f->cores.push_back(core);
      pos = end + 1;
    }
    f->threads = static_cast<uint32_t>(f->cores.size());
    return ok && !f->cores.empty() && f->cores.size() <= 64;
  });
  std::string error;
  FlagParser::Outcome outcome = p.parse(argc, argv, &error);
  // --cores sets the thread count; a later --threads must not leave threads
  // without a core.
  if (outcome == FlagParser::Outcome::kParsed && !f->cores.empty() &&
      f->threads != f->cores.size()) {
    error = "rina-switchd: --threads " + std::to_string(f->threads) + " and --cores with " +
            std::to_string(f->cores.size()) + " cores disagree: give one of them";
    outcome = FlagParser::Outcome::kError;
  }
  if (outcome == FlagParser::Outcome::kError) fprintf(stderr, "%s\n", error.c_str());
  return outcome == FlagParser::Outcome::kParsed;
}

// Every aggregation thread's pipeline, seen as one data plane.
class ShardedDataPlane : public DataPlane {
 public:
  explicit ShardedDataPlane(std::vector<std::unique_ptr<DataThread>>& threads)
      : threads_(threads) {}

  void installJob(const JobEntry& job) override {
    forAll([job](Pipeline& p) { p.installJob(job); });
  }
  void removeJob(uint16_t job) override {
    forAll([job](Pipeline& p) { p.removeJob(job); });
  }
  void assignSlots(uint32_t begin, uint32_t end, uint16_t job) override {
    forAll([=](Pipeline& p) { p.assignSlots(begin, end, job); });
  }
  uint64_t lastActivityMs(uint16_t job) const override {
    uint64_t last = 0;
    for (const auto& t : threads_) last = std::max(last, t->pipeline().lastActivityMs(job));
    return last;
  }
  std::string countersJson() const override {
    std::vector<uint64_t> verdicts(static_cast<size_t>(Verdict::kCount), 0);
    std::vector<uint64_t> malformed(static_cast<size_t>(ina::DecodeError::kCount), 0);
    uint64_t received = 0, contributions = 0, overflows = 0, sent = 0, injected = 0, capacity = 0,
             sendErrors = 0, sendInjected = 0, roceReceived = 0, roceMalformed = 0,
             receiveMessages = 0, sendMessages = 0, roceBadIcrc = 0, roceAttached = 0,
             roceAttachRefused = 0, roceNicSent = 0, socketDrops = 0;
    for (const auto& t : threads_) {
      const PipelineStats& s = t->pipeline().stats();
      for (size_t i = 0; i < verdicts.size(); ++i) verdicts[i] += s.verdicts[i].get();
      for (size_t i = 0; i < malformed.size(); ++i) malformed[i] += s.malformed[i].get();
      received += t->received();
      contributions += s.contributions.get();
      overflows += s.overflows.get();
      sent += s.sent.get();
      injected += t->injectedDrops();
      sendInjected += t->injectedSendDrops();
      capacity += t->capacityDrops();
      sendErrors += t->sendErrors();
      roceReceived += t->roceReceived();
      roceMalformed += t->roceMalformed();
      roceBadIcrc += t->roceBadIcrc();
      roceAttached += t->roceAttached();
      roceAttachRefused += t->roceAttachRefused();
      roceNicSent += t->roceNicSent();
      receiveMessages += t->receivedMessages();
      sendMessages += t->sentMessages();
      socketDrops += t->socketDrops();
    }
    std::string json = "{";
    auto field = [&json](const char* prefix, const char* name, uint64_t v) {
      if (json.size() > 1) json += ',';
      json += '"';
      json += prefix;
      json += name;
      json += "\":";
      json += std::to_string(v);
    };
    field("", "received", received);
    field("", "injected_drops", injected);
    field("", "injected_send_drops", sendInjected);
    field("", "capacity_drops", capacity);
    field("", "contributions", contributions);
    field("", "overflows", overflows);
    field("", "sent", sent);
    field("", "send_errors", sendErrors);
    field("", "roce_received", roceReceived);
    field("", "roce_malformed", roceMalformed);
    field("", "roce_bad_icrc", roceBadIcrc);
    field("", "roce_attached", roceAttached);
    field("", "roce_attach_refused", roceAttachRefused);
    field("", "roce_nic_sent", roceNicSent);
    field("", "receive_messages", receiveMessages);
    field("", "send_messages", sendMessages);
    field("", "socket_drops", socketDrops);
    // The process's CPU time (every thread, from its own rusage): what the
    // data plane costs per byte even on a loaded machine.
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    auto micros = [](const timeval& t) {
      return static_cast<uint64_t>(t.tv_sec) * 1000000 + static_cast<uint64_t>(t.tv_usec);
    };
    field("", "cpu_user_us", micros(ru.ru_utime));
    field("", "cpu_system_us", micros(ru.ru_stime));
    for (size_t i = 0; i < verdicts.size(); ++i) {
      field("", verdictName(static_cast<Verdict>(i)), verdicts[i]);
    }
    for (size_t i = 1; i < malformed.size(); ++i) {
      field("malformed_", ina::decodeErrorName(static_cast<ina::DecodeError>(i)), malformed[i]);
    }
    return json + "}";
  }

 private:
  void forAll(const std::function<void(Pipeline&)>& fn) {
    for (auto& t : threads_) {
      if (!t->runOnThread(fn, kCommandTimeoutMs)) {
        fprintf(stderr,
                "rina-switchd: aggregation thread did not apply a control change in %d ms\n",
                kCommandTimeoutMs);
      }
    }
  }
  std::vector<std::unique_ptr<DataThread>>& threads_;
};

// Binds `count` UDP sockets on consecutive ports from flags.listen (port 0:
// try random blocks).
bool bindDataSockets(const Flags& flags, std::vector<Fd>* sockets, uint16_t* basePort) {
  std::mt19937 rng(std::random_device{}());
  for (int attempt = 0; attempt < (flags.listen.port == 0 ? 64 : 1); ++attempt) {
    uint16_t base = flags.listen.port
                        ? flags.listen.port
                        : static_cast<uint16_t>(20000 + rng() % (60000 - 20000 - flags.threads));
    sockets->clear();
    Status s;
    for (uint32_t i = 0; i < flags.threads && s.ok(); ++i) {
      Fd fd;
      s = ina::openUdpSocket({flags.listen.addr, static_cast<uint16_t>(base + i)}, 8 << 20, &fd);
      if (s.ok()) sockets->push_back(std::move(fd));
    }
    if (s.ok()) {
      *basePort = base;
      return true;
    }
    if (flags.listen.port) {
      fprintf(stderr, "rina-switchd: %s (%u ports from %s)\n", s.message().c_str(), flags.threads,
              flags.listen.toString().c_str());
    }
  }
  return false;
}

// A classic BPF program on a socket: keep only UDP to `port` (a raw IPv4
// socket sees every UDP packet of the host), or nothing at all.
bool filterSocket(int fd, bool keepNothing, uint16_t port) {
  sock_filter toPort[] = {
      BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 22),  // UDP destination port (IPv4, no options)
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, port, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, 0xFFFF),
      BPF_STMT(BPF_RET | BPF_K, 0),
  };
  sock_filter nothing[] = {BPF_STMT(BPF_RET | BPF_K, 0)};
  sock_fprog prog{};
  prog.len = keepNothing ? 1 : 4;
  prog.filter = keepNothing ? nothing : toPort;
  return setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog) == 0;
}

// --roce-raw: per thread a raw receive socket for its RoCEv2 port and a raw
// send socket; the thread's UDP socket keeps the port and receives nothing.
bool openRawSockets(uint16_t rocePort, std::vector<Fd>& roceSockets, std::vector<RawRoce>* out) {
  for (size_t i = 0; i < roceSockets.size(); ++i) {
    RawRoce r;
    r.port = static_cast<uint16_t>(rocePort + i);
    r.receive = Fd(socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_UDP));
    r.send = Fd(socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW));
    if (!r.receive.valid() || !r.send.valid()) {
      fprintf(stderr, "rina-switchd: --roce-raw: raw socket: %s (needs CAP_NET_RAW)\n",
              strerror(errno));
      return false;
    }
    int size = 8 << 20;
    setsockopt(r.receive.get(), SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
    setsockopt(r.send.get(), SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
    if (!filterSocket(r.receive.get(), false, r.port) ||
        !filterSocket(roceSockets[i].get(), true, 0)) {
      fprintf(stderr, "rina-switchd: --roce-raw: socket filter: %s\n", strerror(errno));
      return false;
    }
    out->push_back(std::move(r));
  }
  return true;
}

int run(int argc, char** argv) {
  Flags flags;
  if (!parseFlags(argc, argv, &flags)) {
    usage();
    return 2;
  }
  const Fd stopFd = blockStopSignals();  // before any thread starts

  std::vector<Fd> sockets;
  uint16_t basePort = 0;
  if (!bindDataSockets(flags, &sockets, &basePort)) return 1;
  // The RoCEv2 layout: the default port may be taken (another switchd, a
  // test); only an explicit --roce-port makes that fatal.
  std::vector<Fd> roceSockets;
  uint16_t rocePort = 0;
  if (flags.rocePort >= 0) {
    Flags roceFlags = flags;
    roceFlags.listen.port = static_cast<uint16_t>(flags.rocePort);
    if (!bindDataSockets(roceFlags, &roceSockets, &rocePort)) {
      if (flags.rocePortGiven) return 1;
      fprintf(stderr, "rina-switchd: RoCEv2 layout off: UDP port %d is not free\n", flags.rocePort);
      roceSockets.clear();
    }
  }
  std::vector<RawRoce> raw;
  if (flags.roceRaw) {
    if (roceSockets.empty()) {
      fprintf(stderr, "rina-switchd: --roce-raw needs the RoCEv2 port (--roce-port)\n");
      return 1;
    }
    if (!openRawSockets(rocePort, roceSockets, &raw)) return 1;
  }
  if (!readAdminSecret(kProgram, &flags.control)) return 1;
  Fd listener;
  ina::Endpoint control;
  if (!listenForControl(kProgram, flags.control, &listener, &control)) return 1;

  std::vector<std::unique_ptr<DataThread>> threads;
  for (uint32_t i = 0; i < flags.threads; ++i) {
    PipelineConfig pc{flags.slots, flags.payload, i, flags.threads};
    DataThreadOptions to;
    to.dropRate = flags.dropRate;
    to.sendDropRate = flags.sendDropRate;
    to.seed = flags.seed + i;
    to.capacityPps = flags.capacityPps / flags.threads;
    to.cpu = flags.cores.empty() ? -1 : flags.cores[i];
    threads.push_back(std::make_unique<DataThread>(
        std::move(sockets[i]), pc, to, roceSockets.empty() ? Fd() : std::move(roceSockets[i]),
        raw.empty() ? RawRoce() : std::move(raw[i])));
  }
  ShardedDataPlane dataPlane(threads);
  Controller controller(controllerOptions(flags.control, flags.slots, flags.payload, basePort,
                                          static_cast<uint16_t>(flags.threads)),
                        dataPlane);
  std::string roce = roceSockets.empty() ? std::string("off")
                                         : ina::Endpoint{flags.listen.addr, rocePort}.toString();
  printf("rina-switchd ready data=%s ports=%u control=%s slots=%u payload=%u roce=%s\n",
         ina::Endpoint{flags.listen.addr, basePort}.toString().c_str(), flags.threads,
         control.toString().c_str(), flags.slots, flags.payload, roce.c_str());
  fflush(stdout);

  return serveUntilStopped(kProgram, std::move(listener), controller, flags.control, stopFd);
}

}  // namespace
}  // namespace rina::switchd

int main(int argc, char** argv) { return rina::switchd::run(argc, argv); }
