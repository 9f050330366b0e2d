// p4_differential: rina_v1model.p4 in BMv2 against rina-switchd's pipeline,
// answer for answer (differential.h). Every phase below sends the same
// datagrams and CTRL lines through both; the answers must be equal byte for
// byte, the controllers' replies equal, and at the end every verdict and
// decode-error counter of the two data planes equal.
//
//   p4_differential --simple-switch PATH --json PROGRAM.json --cli COMMAND
//                   --work DIR [--seed N] [--random N]
//
// Exit 0: every phase equal (a summary line per phase); 1: the first
// difference, with both frames; 2: bad arguments or the switch did not start.
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "p4/cases.h"
#include "p4/differential.h"
#include "p4/files_switch.h"

namespace {

int usage() {
  fprintf(stderr,
          "usage: p4_differential --simple-switch PATH --json PROGRAM.json --cli COMMAND\n"
          "                       --work DIR [--seed N] [--random N]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace rina::p4test;
  signal(SIGPIPE, SIG_IGN);  // a switch that died fails the write instead
  FilesSwitchOptions o;
  CaseOptions c;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string name = argv[i], v = argv[i + 1];
    if (name == "--simple-switch") {
      o.simpleSwitch = v;
    } else if (name == "--json") {
      o.json = v;
    } else if (name == "--cli") {
      o.cli = v;
    } else if (name == "--work") {
      o.workDir = v;
    } else if (name == "--seed") {
      c.seed = static_cast<uint32_t>(std::strtoul(v.c_str(), nullptr, 10));
    } else if (name == "--random") {
      c.randomDatagrams = static_cast<int>(std::strtol(v.c_str(), nullptr, 10));
    } else {
      return usage();
    }
  }
  if (argc % 2 != 1 || o.simpleSwitch.empty() || o.json.empty() || o.cli.empty() ||
      o.workDir.empty()) {
    return usage();
  }
  std::unique_ptr<FilesSwitch> sw;
  if (rina::Status s = FilesSwitch::start(o, &sw); !s.ok()) {
    fprintf(stderr, "p4_differential: %s\n", s.message().c_str());
    return 2;
  }
  Differential d(*sw, switchMac(), switchAddress(), testHosts());
  if (rina::Status s = d.prepare(); !s.ok()) {
    fprintf(stderr, "p4_differential: %s\n", s.message().c_str());
    return 2;
  }
  printf("p4_differential: seed %u, %d random datagrams\n", c.seed, c.randomDatagrams);
  for (const Phase& phase : phases()) {
    rina::Status s = phase.run(d, c);
    if (s.ok()) s = d.check(phase.name);
    if (!s.ok()) {
      fprintf(stderr, "FAIL: phase %s: %s\n", phase.name, s.message().c_str());
      return 1;
    }
    printf("phase %-16s %5zu datagrams %5zu answers: equal\n", phase.name, d.lastPhaseDatagrams(),
           d.lastPhaseAnswers());
    fflush(stdout);
  }
  std::string counters;
  if (rina::Status s = d.compareCounters(&counters); !s.ok()) {
    fprintf(stderr, "FAIL: %s\n", s.message().c_str());
    return 1;
  }
  printf("counters equal: %s\n", counters.c_str());
  printf("p4_differential: %zu phases, %zu datagrams, %zu answers, 0 differences\n",
         phases().size(), d.datagrams(), d.answers());
  return 0;
}
