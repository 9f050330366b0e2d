#include "switchd/control_service.h"

#include <signal.h>
#include <sys/signalfd.h>

#include <cstdio>
#include <utility>

#include "wire/ctrl_auth.h"
#include "wire/net.h"

namespace rina::switchd {

void addControlFlags(FlagParser& p, ControlFlags* f) {
  p.addValue("--control", [f](std::string_view v) { return ina::parseEndpoint(v, &f->control); });
  p.addNumber("--idle-ms", &f->idleMs, uint64_t{0});
  p.addNumber("--stats-interval", &f->statsInterval, 0.0);
  p.addNumber("--ctrl-max-connections", &f->ctrl.maxConnections, size_t{1});
  p.addNumber("--ctrl-idle-ms", &f->ctrl.idleMs, uint64_t{1});
  p.addText("--auth-file", &f->authFile);
  p.addNumber("--priority-cap", &f->priorityCap, 0u, 255u);
}

Fd blockStopSignals() {
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &mask, nullptr);
  return Fd(signalfd(-1, &mask, SFD_CLOEXEC));
}

bool readAdminSecret(const char* program, ControlFlags* f) {
  if (f->authFile.empty()) return true;
  std::string error;
  if (ina::readSecretFile(f->authFile, &f->ctrl.secret, &error)) return true;
  fprintf(stderr, "%s: --auth-file: %s\n", program, error.c_str());
  return false;
}

bool listenForControl(const char* program, const ControlFlags& f, Fd* listener,
                      ina::Endpoint* bound) {
  if (Status s = ina::listenTcp(f.control, listener, bound); !s.ok()) {
    fprintf(stderr, "%s: control: %s\n", program, s.message().c_str());
    return false;
  }
  if (f.ctrl.secret.empty()) {
    fprintf(stderr,
            "%s: no --auth-file: anyone who reaches the control port %s can register, release "
            "and list jobs\n",
            program, bound->toString().c_str());
  }
  return true;
}

ControllerOptions controllerOptions(const ControlFlags& f, uint32_t slots, uint32_t payload,
                                    uint16_t dataPort, uint16_t dataPorts) {
  return ControllerOptions{slots,
                           payload,
                           dataPort,
                           dataPorts,
                           f.idleMs,
                           !f.ctrl.secret.empty(),
                           static_cast<uint8_t>(f.priorityCap)};
}

int serveUntilStopped(const char* program, Fd listener, Controller& controller,
                      const ControlFlags& f, const Fd& stopFd) {
  CtrlServer server(std::move(listener), controller, f.ctrl);
  server.run(stopFd.get(), f.statsInterval);
  fprintf(stderr, "%s final %s\n", program, controller.statsJson(steadyNowMs()).c_str());
  return 0;
}

}  // namespace rina::switchd
