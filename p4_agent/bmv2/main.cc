// rina-bmv2ctl: rina's switch controller for a BMv2 simple_switch running
// p4/rina_v1model.p4. It speaks the CTRL protocol to the racks' agents
// exactly as rina-switchd does (the same Controller: grants, ESA preemption,
// authentication) and programs the switch through BMv2's runtime CLI found
// at run time (p4_agent/README.md, "BMv2"). Prints one "rina-bmv2ctl ready
// ..." line on stdout once it serves.
#include <linux/filter.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "bmv2/bmv2_data_plane.h"
#include "bmv2/runtime_cli.h"
#include "switchd/control_service.h"
#include "wire/net.h"

namespace rina::bmv2 {
namespace {

constexpr char kProgram[] = "rina-bmv2ctl";

struct Flags {
  switchd::ControlFlags control;
  ina::Endpoint data{0, kProgramDataPort};
  bool dataGiven = false;
  bool holdData = true;
  ina::Endpoint thrift{0x7F000001, 9090};
  std::string cli = "simple_switch_CLI";
  int cliTimeoutMs = 10000;
  int startTimeoutMs = 10000;
  uint32_t switchPort = 0;
  uint32_t slots = kProgramSlots;
  std::string neighborsFile;
};

void usage() {
  fprintf(stderr,
          "usage: rina-bmv2ctl [--control ADDR:PORT] [--data ADDR:PORT|off] [--thrift ADDR:PORT]\n"
          "         [--cli COMMAND] [--cli-timeout-ms MS] [--start-timeout-ms MS]\n"
          "         [--switch-port N] [--slots N]\n"
          "         [--neighbors FILE] [--idle-ms MS] [--stats-interval S]\n"
          "         [--ctrl-max-connections N] [--ctrl-idle-ms MS] [--auth-file FILE]\n"
          "         [--priority-cap P]\n"
          "  Serves rina's CTRL protocol (as rina-switchd) and programs a BMv2\n"
          "  simple_switch running rina_v1model.p4 through its runtime CLI.\n"
          "  --control       TCP control (CTRL) address, port 0 = any  [127.0.0.1:9101]\n"
          "  --data          the switch's data address, given to the agents in grants;\n"
          "                  its UDP port is held here (bound, nothing read) so that a\n"
          "                  kernel sharing the switch's interface does not answer the\n"
          "                  datagrams BMv2 takes; off = hold nothing\n"
          "                                                   [control address:9100]\n"
          "  --thrift        simple_switch's thrift runtime address  [127.0.0.1:9090]\n"
          "  --cli           the runtime CLI command, run by /bin/sh with --thrift-ip\n"
          "                  and --thrift-port appended              [simple_switch_CLI]\n"
          "  --cli-timeout-ms  a CLI batch with no progress this long fails  [10000]\n"
          "  --start-timeout-ms  how long the switch may take to answer at start [10000]\n"
          "  --switch-port   the BMv2 port datagrams come in and answers leave by  [0]\n"
          "  --slots         aggregator slots granted, <= 8192 (the program's)  [8192]\n"
          "  --neighbors     lines 'A.B.C.D aa:bb:cc:dd:ee:ff': the members' MACs;\n"
          "                  others are taken from the kernel's neighbour table\n"
          "  --idle-ms       ESA: a job idle this long may be preempted        [2000]\n"
          "  --stats-interval  seconds between stats lines on stderr, 0 = off     [0]\n"
          "  --ctrl-max-connections, --ctrl-idle-ms, --auth-file, --priority-cap:\n"
          "                  as rina-switchd's (p4_agent/README.md)\n"
          "  The datagram format is fixed by the program: payload 64, one data port\n"
          "  (UDP 9100). A command the switch refuses, or a switch that stops\n"
          "  answering, stops rina-bmv2ctl (exit 1): it never grants slots it could\n"
          "  not program.\n");
}

// False at --help, or after printing what is wrong.
bool parseFlags(int argc, char** argv, Flags* f) {
  switchd::FlagParser p(kProgram);
  switchd::addControlFlags(p, &f->control);
  p.addValue("--data", [f](std::string_view v) {
    f->dataGiven = true;
    if (v == "off") {
      f->holdData = false;
      return true;
    }
    if (ina::parseEndpoint(v, &f->data) && f->data.port == kProgramDataPort) return true;
    fprintf(stderr, "rina-bmv2ctl: the program serves UDP port %u only\n", kProgramDataPort);
    return false;
  });
  p.addValue("--thrift", [f](std::string_view v) {
    return ina::parseEndpoint(v, &f->thrift) && f->thrift.port != 0;
  });
  p.addText("--cli", &f->cli);
  p.addNumber("--cli-timeout-ms", &f->cliTimeoutMs, 1);
  p.addNumber("--start-timeout-ms", &f->startTimeoutMs, 0);
  p.addNumber("--switch-port", &f->switchPort, 0u, 510u);
  p.addNumber("--slots", &f->slots, 1u, kProgramSlots);
  p.addText("--neighbors", &f->neighborsFile);
  std::string error;
  const switchd::FlagParser::Outcome outcome = p.parse(argc, argv, &error);
  if (outcome == switchd::FlagParser::Outcome::kError) fprintf(stderr, "%s\n", error.c_str());
  if (outcome != switchd::FlagParser::Outcome::kParsed) return false;
  if (!f->dataGiven) f->data.addr = f->control.control.addr;
  return true;
}

// The data port bound with a filter that drops everything: the kernel of a
// host whose interface BMv2 shares sees the datagrams too, and would answer
// each with an ICMP port unreachable.
Status holdDataPort(const ina::Endpoint& data, Fd* out) {
  RINA_TRY(ina::openUdpSocket(data, 4096, out));
  sock_filter nothing[] = {BPF_STMT(BPF_RET | BPF_K, 0)};
  sock_fprog prog{1, nothing};
  if (setsockopt(out->get(), SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog) != 0) {
    return systemErrorf(errno, "filter on %s", data.toString().c_str());
  }
  return {};
}

int run(int argc, char** argv) {
  Flags flags;
  if (!parseFlags(argc, argv, &flags)) {
    usage();
    return 2;
  }
  const Fd stopFd = switchd::blockStopSignals();

  Bmv2DataPlaneOptions po;
  po.totalSlots = flags.slots;
  po.switchPort = flags.switchPort;
  po.clockMs = switchd::steadyNowMs;
  po.onFailure = [](const Status& s) {
    fprintf(stderr, "rina-bmv2ctl: the switch cannot be programmed: %s; stopping\n",
            s.message().c_str());
    std::exit(1);
  };
  if (!flags.neighborsFile.empty()) {
    if (Status s = readNeighborFile(flags.neighborsFile, &po.neighbors); !s.ok()) {
      fprintf(stderr, "rina-bmv2ctl: %s\n", s.message().c_str());
      return 1;
    }
  }
  if (!switchd::readAdminSecret(kProgram, &flags.control)) return 1;
  Fd held;
  if (flags.holdData) {
    if (Status s = holdDataPort(flags.data, &held); !s.ok()) {
      fprintf(stderr, "rina-bmv2ctl: --data: %s\n", s.message().c_str());
      return 1;
    }
  }
  RuntimeCliOptions co;
  co.command = flags.cli;
  co.thriftIp = flags.thrift.addressString();
  co.thriftPort = flags.thrift.port;
  co.timeoutMs = flags.cliTimeoutMs;
  // The switch may still be starting: its thrift server answers last.
  std::unique_ptr<RuntimeCli> cli;
  const uint64_t deadline = switchd::steadyNowMs() + static_cast<uint64_t>(flags.startTimeoutMs);
  while (true) {
    Status s = RuntimeCli::start(co, &cli);
    if (s.ok()) break;
    if (switchd::steadyNowMs() >= deadline) {
      fprintf(stderr, "rina-bmv2ctl: %s\n", s.message().c_str());
      return 1;
    }
    poll(nullptr, 0, 200);
  }
  Bmv2DataPlane dataPlane(*cli, po);
  if (Status s = dataPlane.prepare(); !s.ok()) {
    fprintf(stderr, "rina-bmv2ctl: %s\n", s.message().c_str());
    return 1;
  }
  Fd listener;
  ina::Endpoint control;
  if (!switchd::listenForControl(kProgram, flags.control, &listener, &control)) return 1;
  switchd::Controller controller(
      switchd::controllerOptions(flags.control, flags.slots, kProgramPayloadElems, kProgramDataPort,
                                 1),
      dataPlane);
  printf("rina-bmv2ctl ready data=%s ports=1 control=%s slots=%u payload=%u thrift=%s\n",
         flags.data.toString().c_str(), control.toString().c_str(), flags.slots,
         kProgramPayloadElems, flags.thrift.toString().c_str());
  fflush(stdout);
  return switchd::serveUntilStopped(kProgram, std::move(listener), controller, flags.control,
                                    stopFd);
}

}  // namespace
}  // namespace rina::bmv2

int main(int argc, char** argv) { return rina::bmv2::run(argc, argv); }
