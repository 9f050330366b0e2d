// The TCP side of the controller: accepts CTRL connections, feeds their lines
// to the Controller, writes replies, delivers preemption notices to the
// connection that registered the victim job, and prints stats periodically.
//
// One thread serves every connection and never blocks on one: sockets are
// non-blocking, each connection has its own input and output buffers, a
// connection whose unsent replies exceed a cap is not read until they drain,
// lines are capped (ina::kMaxCtrlLineBytes), and connections are capped in
// number (the longest-idle one that holds no job gives way to a new one) and
// in idle time. At the process's descriptor limit a spare descriptor is given
// up to accept, so the listener never spins.
#ifndef RINA_P4_AGENT_SWITCHD_CTRL_SERVER_H_
#define RINA_P4_AGENT_SWITCHD_CTRL_SERVER_H_

#include <map>
#include <memory>
#include <string>

#include "switchd/control.h"
#include "wire/ctrl_auth.h"
#include "wire/net.h"

namespace rina::switchd {

struct CtrlServerOptions {
  size_t maxConnections = 4096;
  // A connection that sends nothing for this long is closed, unless it
  // registered a job (it receives that job's notices); any connection whose
  // replies make no progress for this long is closed.
  uint64_t idleMs = 60000;
  // Unsent reply bytes above which a connection is not read.
  size_t maxPendingOutput = 256 * 1024;
  // The admin secret (--auth-file); empty: requests are not authenticated.
  std::string secret;
};

struct CtrlServerStats {
  uint64_t accepted = 0;
  uint64_t evicted = 0;       // closed to make room for a new connection
  uint64_t idleClosed = 0;    // closed for idleness or replies that do not drain
  uint64_t overlong = 0;      // closed for a line above the limit
  uint64_t acceptErrors = 0;  // accept() failures other than "nothing pending"
};

class CtrlServer {
 public:
  CtrlServer(Fd listener, Controller& controller, const CtrlServerOptions& options = {});

  // Serves until stopFd becomes readable (e.g. a signalfd). statsIntervalS > 0
  // prints controller stats as one JSON line on stderr at that period.
  void run(int stopFd, double statsIntervalS);
  const CtrlServerStats& stats() const { return stats_; }

 private:
  struct Connection {
    Fd fd;
    ina::LineReader reader;
    std::string out;     // reply bytes not yet written
    size_t outSent = 0;  // of out
    uint64_t lastInputMs = 0;
    uint64_t lastOutputMs = 0;  // last write progress (or when output became pending)
    int jobs = 0;               // jobs this connection registered
    std::unique_ptr<ina::CtrlAuthSession> auth;  // with a secret
  };

  void acceptPending(uint64_t nowMs);
  bool evictOne();
  // False when the connection must be closed.
  bool readFrom(Connection& c, uint64_t nowMs);
  bool handleLines(Connection& c, uint64_t nowMs);
  bool flush(Connection& c, uint64_t nowMs);
  void queue(Connection& c, const std::string& line, uint64_t nowMs);
  size_t pending(const Connection& c) const { return c.out.size() - c.outSent; }
  void close(int fd);
  void closeIdle(uint64_t nowMs);

  Fd listener_;
  Controller& controller_;
  CtrlServerOptions options_;
  CtrlServerStats stats_;
  Fd spare_;  // given up to accept() at the descriptor limit
  uint64_t listenerPausedUntilMs_ = 0;
  std::map<int, std::unique_ptr<Connection>> connections_;  // by fd
  std::map<uint16_t, int> jobConnection_;                   // job -> fd that registered it
};

uint64_t steadyNowMs();

}  // namespace rina::switchd

#endif  // RINA_P4_AGENT_SWITCHD_CTRL_SERVER_H_
