// The TCP side of the controller: accepts CTRL connections, feeds their lines
// to the Controller, writes replies, delivers preemption notices to the
// connection that registered the victim job, and prints stats periodically.
#ifndef RINA_P4_AGENT_SWITCHD_CTRL_SERVER_H_
#define RINA_P4_AGENT_SWITCHD_CTRL_SERVER_H_

#include <map>
#include <memory>

#include "inanet/net.h"
#include "switchd/control.h"

namespace rina::switchd {

class CtrlServer {
 public:
  CtrlServer(Fd listener, Controller& controller)
      : listener_(std::move(listener)), controller_(controller) {}

  // Serves until stopFd becomes readable (e.g. a signalfd). statsIntervalS > 0
  // prints controller stats as one JSON line on stderr at that period.
  void run(int stopFd, double statsIntervalS);

 private:
  struct Connection {
    Fd fd;
    ina::LineReader reader;
  };
  // False when the connection must be closed.
  bool serve(Connection& c);

  Fd listener_;
  Controller& controller_;
  std::map<int, std::unique_ptr<Connection>> connections_;  // by fd
  std::map<uint16_t, int> jobConnection_;                   // job -> fd that registered it
};

uint64_t steadyNowMs();

}  // namespace rina::switchd

#endif  // RINA_P4_AGENT_SWITCHD_CTRL_SERVER_H_
