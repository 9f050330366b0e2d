// A rina-switchd child process on loopback, for RINA_SWITCH=auto: the agent
// of an INA rack with no configured switch starts one and stops it when the
// communicator is destroyed.
//
// It gets a fresh random admin secret that never touches a disk: a mode
// 0600 memory file (memfd) it inherits, named to it as --auth-file
// /proc/self/fd/N; a CtrlClient to its control port signs its requests with
// it (localSwitchdSecret).
//
// A thread of this object forks the child and waits for it. The child gets
// SIGKILL when that thread ends (PR_SET_PDEATHSIG follows the forking
// thread, not the process), and the thread ends only once the child was
// reaped: so the switch lives exactly as long as this object or the
// process, whichever goes first, whatever thread created the communicator
// (a crashed or SIGKILLed rank leaves no switch and no secret behind). A
// switch that dies is reaped at once (no zombie), logged at WARN with its
// pid and how it ended, and exited() says so to the agent.
//
// The binary: RINA_SWITCHD_PATH if set; else rina-switchd next to the
// library or program that contains rina (same folder, ../bin, or the build
// tree's ../p4_agent); else the first rina-switchd on PATH.
#ifndef RINA_LIB_INA_LOCAL_SWITCHD_H_
#define RINA_LIB_INA_LOCAL_SWITCHD_H_

#include <sys/types.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/socket.h"
#include "core/status.h"
#include "wire/endpoint.h"

namespace rina::ina {

// Where rina-switchd is, by the rules above (configured: RINA_SWITCHD_PATH,
// empty when unset); rinaInvalidUsage if nowhere.
Status findSwitchd(const std::string& configured, std::string* path);

class LocalSwitchd {
 public:
  // Starts `path --listen 127.0.0.1:0 --control 127.0.0.1:0 --payload 2048
  // --auth-file /proc/self/fd/N extraArgs...` and waits (timeoutMs) for its
  // "ready" line. Size it with extraArgs (--slots: its memory and start
  // time grow with slots x payload).
  static Status start(const std::string& path, const std::vector<std::string>& extraArgs,
                      int timeoutMs, std::unique_ptr<LocalSwitchd>* out);
  ~LocalSwitchd();  // SIGTERM, then SIGKILL after 2 s
  LocalSwitchd(const LocalSwitchd&) = delete;
  LocalSwitchd& operator=(const LocalSwitchd&) = delete;

  const Endpoint& control() const { return control_; }
  pid_t pid() const { return pid_; }
  // The switch ended (and was reaped) before this object stopped it; *how:
  // "exited with status N" or "was killed by signal N".
  bool exited(std::string* how) const;

 private:
  LocalSwitchd() = default;
  // What the child gets: its stdout, its stderr (-1: this process's) and the
  // secret's memfd.
  struct ChildFds {
    int out, err, secret;
  };
  // The reaper thread: forks the child, waits for it, records how it ended,
  // reaps it.
  void forkAndReap(ChildFds fds);

  std::vector<std::string> args_;
  std::vector<char*> argv_;  // into args_, for execv
  pid_t pid_ = -1;
  std::thread reaper_;
  mutable std::mutex mu_;
  std::condition_variable ended_;
  bool forked_ = false;  // pid_ is known (-1: fork failed, forkErrno_ says why)
  int forkErrno_ = 0;
  bool exited_ = false;    // the child ended; its pid is not reused until reaped
  bool stopping_ = false;  // the destructor stops it: its end is no news
  std::string how_;
  Endpoint control_;
  Fd stdout_;
};

// The admin secret of the local switch whose control port is `control`, or
// "" when this process started none there.
std::string localSwitchdSecret(const Endpoint& control);

// Splits RINA_SWITCHD_ARGS-style text at blanks.
std::vector<std::string> splitArgs(const std::string& text);

}  // namespace rina::ina

#endif  // RINA_LIB_INA_LOCAL_SWITCHD_H_
