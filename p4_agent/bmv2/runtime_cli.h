// A session with BMv2's runtime CLI (simple_switch_CLI, or sswitch_CLI.py
// run by python3): a child process that talks thrift to one simple_switch.
// It reads one command per line on stdin and writes its output followed by
// the prompt "RuntimeCmd: ", so a command's output is everything up to the
// next prompt. Nothing of BMv2 is linked in: the CLI is found at run time
// (the command line is the user's, run through /bin/sh).
//
// A command whose output reports an error (BMv2's "Invalid ...", "Error:",
// cmd's "*** Unknown syntax") fails the batch with that output; so does a
// CLI that exits (the switch went away: the thrift call raised) or says
// nothing for the timeout.
#ifndef RINA_P4_AGENT_BMV2_RUNTIME_CLI_H_
#define RINA_P4_AGENT_BMV2_RUNTIME_CLI_H_

#include <sys/types.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/socket.h"
#include "core/status.h"

namespace rina::bmv2 {

struct RuntimeCliOptions {
  // The CLI command, run as `/bin/sh -c "<command> --thrift-ip IP --thrift-port P"`.
  std::string command = "simple_switch_CLI";
  std::string thriftIp = "127.0.0.1";
  uint16_t thriftPort = 9090;
  // A batch (or the start) that shows no progress this long fails.
  int timeoutMs = 10000;
};

class RuntimeCli {
 public:
  // Starts the CLI and waits for its first prompt (it connected to the switch).
  static Status start(const RuntimeCliOptions& options, std::unique_ptr<RuntimeCli>* out);
  ~RuntimeCli();
  RuntimeCli(const RuntimeCli&) = delete;
  RuntimeCli& operator=(const RuntimeCli&) = delete;

  // Runs the commands in order (written while earlier outputs are read, so a
  // long batch costs one round trip per pipe buffer, not per command).
  // (*outputs)[i] is command i's output. Fails at the first command whose
  // output reports an error, naming it.
  Status run(std::span<const std::string> commands, std::vector<std::string>* outputs = nullptr);
  Status run(const std::string& command, std::string* output = nullptr);

  const RuntimeCliOptions& options() const { return options_; }
  // The no-progress timeout of later batches.
  void setTimeoutMs(int timeoutMs) { options_.timeoutMs = timeoutMs; }

 private:
  explicit RuntimeCli(const RuntimeCliOptions& options) : options_(options) {}
  // Reads until `prompts` more prompts arrived (each output appended to
  // *outputs), writing `pending` meanwhile.
  Status exchange(std::string pending, size_t prompts, std::vector<std::string>* outputs);
  // How the CLI ended (waiting up to waitMs for a CLI whose output closed).
  std::string describeExit(int waitMs);

  RuntimeCliOptions options_;
  pid_t pid_ = -1;
  Fd toCli_;
  Fd fromCli_;
  std::string buffer_;  // output read past the last prompt
  bool dead_ = false;
};

// "... with handle N" (table_add, mc_node_create): N, or -1.
long parseHandle(const std::string& output);
// "name[i]= (B bytes, P packets)" (counter_read): P, or -1.
long long parseCounterPackets(const std::string& output);
// "name[i]= V" (register_read): V, or -1.
long long parseRegisterValue(const std::string& output);

}  // namespace rina::bmv2

#endif  // RINA_P4_AGENT_BMV2_RUNTIME_CLI_H_
