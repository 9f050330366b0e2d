#include "p4/files_switch.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace rina::p4test {
namespace {

uint64_t nowMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// A TCP port nothing listens on now (the switch binds it a moment later;
// the CLI's connection attempts are retried).
Status freePort(uint16_t* port) {
  Fd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (!fd.valid() || bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    return systemErrorf(errno, "a free TCP port");
  }
  *port = ntohs(a.sin_port);
  return {};
}

std::string readFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace

Status FilesSwitch::start(const FilesSwitchOptions& options, std::unique_ptr<FilesSwitch>* out) {
  std::unique_ptr<FilesSwitch> sw(new FilesSwitch());
  sw->options_ = options;
  const std::string base = options.workDir + "/p0";
  const std::string fifo = base + "_in.pcap";
  unlink(fifo.c_str());
  unlink((base + "_out.pcap").c_str());
  if (mkfifo(fifo.c_str(), 0600) != 0) return systemErrorf(errno, "mkfifo %s", fifo.c_str());
  // Read-write: the open does not wait for a reader, and the switch's open
  // does not wait for a writer. The file header goes in at once (the switch
  // reads it while it starts); records follow when the tables are filled.
  sw->input_ = Fd(open(fifo.c_str(), O_RDWR | O_CLOEXEC));
  if (!sw->input_.valid()) return systemErrorf(errno, "open %s", fifo.c_str());
  std::vector<uint8_t> header = pcapFileHeader();
  if (write(sw->input_.get(), header.data(), header.size()) != ssize_t(header.size())) {
    return systemErrorf(errno, "write %s", fifo.c_str());
  }
  uint16_t thrift = 0;
  RINA_TRY(freePort(&thrift));
  const std::string log = options.workDir + "/simple_switch.log";
  std::vector<std::string> args = {
      options.simpleSwitch, "--use-files",          "0",         "-i", "0@" + base,
      "--thrift-port",      std::to_string(thrift), options.json};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  int rc = posix_spawn(&sw->pid_, args[0].c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return systemErrorf(rc, "start %s", args[0].c_str());

  bmv2::RuntimeCliOptions co;
  co.command = options.cli;
  co.thriftPort = thrift;
  co.timeoutMs = options.timeoutMs;
  const uint64_t deadline = nowMs() + static_cast<uint64_t>(options.timeoutMs);
  Status s;
  while (true) {
    s = bmv2::RuntimeCli::start(co, &sw->cli_);
    if (s.ok()) break;
    if (!sw->alive()) {
      return errorf(rinaSystemError, "simple_switch exited at start: %s", sw->logTail().c_str());
    }
    if (nowMs() > deadline) {
      return s.prepend("simple_switch's thrift server did not answer in " +
                       std::to_string(options.timeoutMs) + " ms: ");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  *out = std::move(sw);
  return {};
}

FilesSwitch::~FilesSwitch() {
  cli_.reset();
  input_.reset();
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  const uint64_t deadline = nowMs() + 5000;
  while (waitpid(pid_, nullptr, WNOHANG) == 0) {
    if (nowMs() > deadline) {
      ::kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

bool FilesSwitch::alive() {
  if (pid_ <= 0) return false;
  if (waitpid(pid_, nullptr, WNOHANG) == pid_) pid_ = -1;
  return pid_ > 0;
}

std::string FilesSwitch::logTail() const {
  std::string log = readFile(options_.workDir + "/simple_switch.log");
  return log.size() > 2000 ? log.substr(log.size() - 2000) : log;
}

Status FilesSwitch::send(const Frame& frame) {
  std::vector<uint8_t> record = pcapRecord(frame);
  size_t done = 0;
  while (done < record.size()) {
    ssize_t w = write(input_.get(), record.data() + done, record.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return systemErrorf(errno, "writing a frame to simple_switch");
    done += static_cast<size_t>(w);
  }
  return {};
}

Status FilesSwitch::waitFor(const std::string& what,
                            const std::function<bool(const std::vector<Frame>&)>& done,
                            std::vector<Frame>* frames) {
  const std::string path = options_.workDir + "/p0_out.pcap";
  const uint64_t deadline = nowMs() + static_cast<uint64_t>(options_.timeoutMs);
  while (true) {
    std::string bytes = readFile(path);
    parsePcap(
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()),
        frames);
    if (done(*frames)) return {};
    if (!alive()) {
      return errorf(rinaSystemError, "simple_switch exited while waiting for %s: %s", what.c_str(),
                    logTail().c_str());
    }
    if (nowMs() > deadline) {
      return errorf(rinaTimeout, "simple_switch wrote %zu frames, and not %s, in %d ms",
                    frames->size(), what.c_str(), options_.timeoutMs);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace rina::p4test
