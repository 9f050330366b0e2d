#include "bmv2/runtime_cli.h"

#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

extern char** environ;

namespace rina::bmv2 {
namespace {

constexpr std::string_view kPrompt = "RuntimeCmd: ";
constexpr int kExitWaitMs = 5000;

uint64_t nowMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// BMv2's CLI reports a failed command on stdout and carries on.
bool reportsError(const std::string& output) {
  size_t pos = 0;
  while (pos < output.size()) {
    size_t end = output.find('\n', pos);
    if (end == std::string::npos) end = output.size();
    std::string_view line(output.data() + pos, end - pos);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    for (std::string_view bad : {"Invalid", "Error", "***", "Traceback"}) {
      if (line.substr(0, bad.size()) == bad) return true;
    }
    pos = end + 1;
  }
  return false;
}

std::string oneLine(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  for (char& c : text) {
    if (c == '\n') c = '|';
  }
  return text;
}

}  // namespace

Status RuntimeCli::start(const RuntimeCliOptions& options, std::unique_ptr<RuntimeCli>* out) {
  std::unique_ptr<RuntimeCli> cli(new RuntimeCli(options));
  // One socket pair is the CLI's stdin, stdout and stderr: writes to a CLI
  // that died fail with EPIPE (MSG_NOSIGNAL) instead of raising SIGPIPE.
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    return systemErrorf(errno, "runtime CLI: socketpair");
  }
  Fd mine(fds[0]);
  Fd theirs(fds[1]);
  std::string commandLine = options.command + " --thrift-ip " + options.thriftIp +
                            " --thrift-port " + std::to_string(options.thriftPort);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  for (int target : {0, 1, 2}) posix_spawn_file_actions_adddup2(&actions, theirs.get(), target);
  // Outputs flushed as written (the prompt is what delimits them).
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    if (std::strncmp(*e, "PYTHONUNBUFFERED=", 17) != 0) env.emplace_back(*e);
  }
  env.emplace_back("PYTHONUNBUFFERED=1");
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string sh = "/bin/sh", dashC = "-c";
  char* argv[] = {sh.data(), dashC.data(), commandLine.data(), nullptr};
  int rc = posix_spawn(&cli->pid_, "/bin/sh", &actions, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0)
    return systemErrorf(rc, "runtime CLI: cannot start /bin/sh -c '%s'", commandLine.c_str());
  theirs.reset();
  cli->fromCli_ = std::move(mine);
  cli->toCli_ = Fd(dup(cli->fromCli_.get()));
  if (!cli->toCli_.valid()) return systemErrorf(errno, "runtime CLI: dup");
  std::vector<std::string> banner;
  Status s = cli->exchange("", 1, &banner);
  if (!s.ok()) {
    return s.prepend("runtime CLI '" + commandLine + "' did not start: ");
  }
  *out = std::move(cli);
  return {};
}

RuntimeCli::~RuntimeCli() {
  if (pid_ <= 0) return;
  if (fromCli_.valid()) shutdown(fromCli_.get(), SHUT_WR);  // EOF: the CLI exits
  const uint64_t deadline = nowMs() + kExitWaitMs;
  while (waitpid(pid_, nullptr, WNOHANG) == 0) {
    if (nowMs() > deadline) {
      ::kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::string RuntimeCli::describeExit(int waitMs) {
  int status = 0;
  pid_t r = 0;
  for (int waited = 0; pid_ > 0 && (r = waitpid(pid_, &status, WNOHANG)) == 0 && waited < waitMs;
       waited += 10) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::string how = "stopped answering";
  if (r == pid_) {
    pid_ = -1;
    how = WIFEXITED(status)     ? "exited with status " + std::to_string(WEXITSTATUS(status))
          : WIFSIGNALED(status) ? "was killed by signal " + std::to_string(WTERMSIG(status))
                                : "ended";
  }
  std::string tail = buffer_.size() > 600 ? buffer_.substr(buffer_.size() - 600) : buffer_;
  return "the runtime CLI (thrift " + options_.thriftIp + ":" +
         std::to_string(options_.thriftPort) + ") " + how +
         (tail.empty() ? "" : "; it said: " + oneLine(tail));
}

Status RuntimeCli::exchange(std::string pending, size_t prompts,
                            std::vector<std::string>* outputs) {
  if (dead_) return errorf(rinaSystemError, "%s", describeExit(0).c_str());
  size_t written = 0;
  uint64_t deadline = nowMs() + static_cast<uint64_t>(options_.timeoutMs);
  while (prompts > 0) {
    size_t at = buffer_.find(kPrompt);
    if (at != std::string::npos) {
      outputs->push_back(buffer_.substr(0, at));
      buffer_.erase(0, at + kPrompt.size());
      --prompts;
      continue;
    }
    pollfd p[2] = {{fromCli_.get(), POLLIN, 0}, {toCli_.get(), POLLOUT, 0}};
    const bool writing = written < pending.size();
    const uint64_t now = nowMs();
    if (now >= deadline) {
      dead_ = true;
      return errorf(rinaTimeout, "no answer in %d ms: %s", options_.timeoutMs,
                    describeExit(0).c_str());
    }
    int n = poll(p, writing ? 2 : 1, static_cast<int>(deadline - now));
    if (n < 0) {
      if (errno == EINTR) continue;
      return systemErrorf(errno, "runtime CLI: poll");
    }
    if (writing && (p[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t w = send(toCli_.get(), pending.data() + written, pending.size() - written,
                       MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w < 0 && errno != EAGAIN && errno != EINTR) {
        dead_ = true;
        return errorf(rinaSystemError, "%s", describeExit(kExitWaitMs).c_str());
      }
      if (w > 0) {
        written += static_cast<size_t>(w);
        deadline = nowMs() + static_cast<uint64_t>(options_.timeoutMs);
      }
    }
    if (p[0].revents & (POLLIN | POLLERR | POLLHUP)) {
      char chunk[4096];
      ssize_t r = recv(fromCli_.get(), chunk, sizeof chunk, MSG_DONTWAIT);
      if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
        dead_ = true;
        return errorf(rinaSystemError, "%s", describeExit(kExitWaitMs).c_str());
      }
      if (r > 0) {
        buffer_.append(chunk, static_cast<size_t>(r));
        deadline = nowMs() + static_cast<uint64_t>(options_.timeoutMs);
      }
    }
  }
  return {};
}

Status RuntimeCli::run(std::span<const std::string> commands, std::vector<std::string>* outputs) {
  std::string pending;
  for (const std::string& c : commands) {
    if (c.find('\n') != std::string::npos) {
      return errorf(rinaInvalidArgument, "runtime CLI: a command holds a newline: '%s'",
                    oneLine(c).c_str());
    }
    pending += c;
    pending += '\n';
  }
  std::vector<std::string> got;
  Status s = exchange(std::move(pending), commands.size(), &got);
  for (size_t i = 0; i < got.size(); ++i) {
    if (reportsError(got[i])) {
      return errorf(rinaRemoteError, "runtime CLI: '%s' failed: %s", commands[i].c_str(),
                    oneLine(got[i]).c_str());
    }
  }
  if (!s.ok()) {
    return s.prepend("runtime CLI: after " + std::to_string(got.size()) + " of " +
                     std::to_string(commands.size()) + " commands: ");
  }
  if (outputs) *outputs = std::move(got);
  return {};
}

Status RuntimeCli::run(const std::string& command, std::string* output) {
  std::vector<std::string> outputs;
  RINA_TRY(run(std::span<const std::string>(&command, 1), &outputs));
  if (output) *output = outputs.front();
  return {};
}

long parseHandle(const std::string& output) {
  constexpr std::string_view kKey = "with handle ";
  size_t at = output.rfind(kKey);
  if (at == std::string::npos) return -1;
  char* end = nullptr;
  const char* begin = output.c_str() + at + kKey.size();
  long v = std::strtol(begin, &end, 10);
  return end == begin ? -1 : v;
}

long long parseCounterPackets(const std::string& output) {
  size_t at = output.find(" bytes, ");
  if (at == std::string::npos) return -1;
  char* end = nullptr;
  const char* begin = output.c_str() + at + 8;
  long long v = std::strtoll(begin, &end, 10);
  return end == begin || std::strncmp(end, " packets)", 9) != 0 ? -1 : v;
}

long long parseRegisterValue(const std::string& output) {
  size_t at = output.find("]= ");
  if (at == std::string::npos) return -1;
  char* end = nullptr;
  const char* begin = output.c_str() + at + 3;
  long long v = std::strtoll(begin, &end, 10);
  return end == begin ? -1 : v;
}

}  // namespace rina::bmv2
