// What both switch programs (rina-switchd, rina-bmv2ctl) do alike around
// their Controller: the control flags, the stop signals, the admin secret,
// the CTRL listener, and serving it until SIGINT or SIGTERM. Each program
// keeps its own data plane and its own "ready" line.
#ifndef RINA_P4_AGENT_SWITCHD_CONTROL_SERVICE_H_
#define RINA_P4_AGENT_SWITCHD_CONTROL_SERVICE_H_

#include <cstdint>
#include <string>

#include "core/socket.h"
#include "switchd/control.h"
#include "switchd/ctrl_server.h"
#include "switchd/flag_parser.h"
#include "wire/endpoint.h"

namespace rina::switchd {

struct ControlFlags {
  ina::Endpoint control{0x7F000001, 9101};  // --control
  uint64_t idleMs = 2000;                   // --idle-ms (ESA)
  double statsInterval = 0;                 // --stats-interval
  CtrlServerOptions ctrl;                   // --ctrl-max-connections, --ctrl-idle-ms
  std::string authFile;                     // --auth-file (ctrl.secret once read)
  uint32_t priorityCap = 255;               // --priority-cap
};
// Adds the flags above to p (p4_agent/README.md says what each does).
void addControlFlags(FlagParser& p, ControlFlags* f);

// Blocks SIGINT and SIGTERM in the calling thread, before any other thread
// starts (they inherit the mask), and returns the fd they are read from.
Fd blockStopSignals();

// Reads --auth-file into f->ctrl.secret (nothing without one); false after
// saying why on stderr ("PROGRAM: --auth-file: ...").
bool readAdminSecret(const char* program, ControlFlags* f);
// Listens on --control (*bound: the address it got); says on stderr when
// there is no admin secret, and why that matters. False after saying why.
bool listenForControl(const char* program, const ControlFlags& f, Fd* listener,
                      ina::Endpoint* bound);

// The controller's options: the flags' and the data plane's (its slots,
// payload, first data port and number of data ports).
ControllerOptions controllerOptions(const ControlFlags& f, uint32_t slots, uint32_t payload,
                                    uint16_t dataPort, uint16_t dataPorts);

// Serves CTRL on listener until stopFd is readable, then prints "PROGRAM
// final STATS" on stderr; the program's exit code (0).
int serveUntilStopped(const char* program, Fd listener, Controller& controller,
                      const ControlFlags& f, const Fd& stopFd);

}  // namespace rina::switchd

#endif  // RINA_P4_AGENT_SWITCHD_CONTROL_SERVICE_H_
