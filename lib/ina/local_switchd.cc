#include "ina/local_switchd.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>

#include "core/log.h"
#include "wire/ctrl_auth.h"
#include "wire/net.h"

namespace rina::ina {
namespace {

bool executable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

std::string folderOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// The secrets of the local switches this process runs, by control endpoint.
std::mutex& secretsMutex() {
  static std::mutex mu;
  return mu;
}
std::map<std::string, std::string>& secrets() {
  static std::map<std::string, std::string> m;
  return m;
}

}  // namespace

std::vector<std::string> splitArgs(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string word;
  while (in >> word) out.push_back(word);
  return out;
}

Status findSwitchd(const std::string& configured, std::string* path) {
  if (!configured.empty()) {
    if (!executable(configured)) {
      return errorf(rinaInvalidUsage, "RINA_SWITCHD_PATH=%s is not an executable file",
                    configured.c_str());
    }
    *path = configured;
    return {};
  }
  std::vector<std::string> folders;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&findSwitchd), &info) && info.dli_fname) {
    folders.push_back(folderOf(info.dli_fname));
  }
  char exe[4096] = {0};
  if (readlink("/proc/self/exe", exe, sizeof(exe) - 1) > 0) folders.push_back(folderOf(exe));
  for (const std::string& f : folders) {
    for (const char* rel : {"/rina-switchd", "/../bin/rina-switchd", "/../p4_agent/rina-switchd"}) {
      if (executable(f + rel)) {
        *path = f + rel;
        return {};
      }
    }
  }
  const char* env = std::getenv("PATH");
  std::istringstream dirs(env ? env : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (!dir.empty() && executable(dir + "/rina-switchd")) {
      *path = dir + "/rina-switchd";
      return {};
    }
  }
  return errorf(rinaInvalidUsage,
                "RINA_SWITCH=auto: no rina-switchd next to librina or on PATH; set "
                "RINA_SWITCHD_PATH or list switch addresses in RINA_SWITCH");
}

Status LocalSwitchd::start(const std::string& path, const std::vector<std::string>& extraArgs,
                           int timeoutMs, std::unique_ptr<LocalSwitchd>* out) {
  // A software switch on loopback is not bound by a Tofino's 32-64 element
  // payload: larger datagrams cut its per-datagram cost (2048, the most the
  // wire allows, measured 1.8x faster than 1024 on loopback;
  // RINA_SWITCHD_ARGS comes after, so --payload there wins).
  std::unique_ptr<LocalSwitchd> sw(new LocalSwitchd());
  // The secret never touches a disk: a memory file (memfd, mode
  // 0600) that the child inherits and reads as its --auth-file through
  // /proc/self/fd, so no secret or folder outlives a killed rank.
  Fd secretFd(memfd_create("rina-switchd-auth", MFD_CLOEXEC));
  if (!secretFd.valid()) return systemErrorf(errno, "rina-switchd: memfd_create");
  const std::string secret = randomHex(32);
  const std::string text = secret + "\n";
  if (fchmod(secretFd.get(), 0600) != 0 ||
      write(secretFd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    return systemErrorf(errno, "rina-switchd: writing its secret");
  }
  sw->args_ = {path,        "--listen",    "127.0.0.1:0",
               "--control", "127.0.0.1:0", "--payload",
               "2048",      "--auth-file", "/proc/self/fd/" + std::to_string(secretFd.get())};
  sw->args_.insert(sw->args_.end(), extraArgs.begin(), extraArgs.end());
  for (auto& a : sw->args_) sw->argv_.push_back(a.data());
  sw->argv_.push_back(nullptr);
  int pipeFds[2];
  if (pipe2(pipeFds, O_CLOEXEC) != 0) return systemErrorf(errno, "rina-switchd: pipe");
  Fd reader(pipeFds[0]);
  Fd writer(pipeFds[1]);
  // Its final stats go to stderr: shown from RINA_DEBUG=INFO on.
  Fd devNull(logLevel() >= LogLevel::kInfo ? -1 : open("/dev/null", O_WRONLY | O_CLOEXEC));
  // The reaper thread forks: the child's PR_SET_PDEATHSIG follows the thread
  // that forked it, and this one lives until the switch is reaped, so the
  // switch dies with the process (or this object), not with the caller's
  // thread.
  const ChildFds fds{writer.get(), devNull.get(), secretFd.get()};
  sw->reaper_ = std::thread([raw = sw.get(), fds] { raw->forkAndReap(fds); });
  {
    std::unique_lock<std::mutex> lock(sw->mu_);
    sw->ended_.wait(lock, [&] { return sw->forked_; });
    if (sw->pid_ < 0) return systemErrorf(sw->forkErrno_, "rina-switchd: fork");
  }
  writer.reset();  // the child holds its copies; EOF on reader when it ends
  fcntl(reader.get(), F_SETFL, O_NONBLOCK);
  LineReader lines;
  std::string line;
  Status s = readLine(reader.get(), lines, timeoutMs, &line);
  if (!s.ok()) return s.prepend("rina-switchd (" + path + ") did not start: ");
  // "rina-switchd ready data=A:P ports=N control=A:P slots=.. payload=.."
  size_t at = line.find(" control=");
  std::string control = at == std::string::npos ? "" : line.substr(at + 9);
  control = control.substr(0, control.find(' '));
  if (line.rfind("rina-switchd ready", 0) != 0 || !parseEndpoint(control, &sw->control_)) {
    return errorf(rinaSystemError, "rina-switchd (%s) printed '%s' instead of its ready line",
                  path.c_str(), line.c_str());
  }
  sw->stdout_ = std::move(reader);  // kept open: a later write must not raise SIGPIPE
  {
    std::lock_guard<std::mutex> lock(secretsMutex());
    secrets()[sw->control_.toString()] = secret;
  }
  *out = std::move(sw);
  return {};
}

std::string localSwitchdSecret(const Endpoint& control) {
  std::lock_guard<std::mutex> lock(secretsMutex());
  auto it = secrets().find(control.toString());
  return it == secrets().end() ? "" : it->second;
}

void LocalSwitchd::forkAndReap(ChildFds fds) {
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    // Only async-signal-safe calls between fork and exec.
    prctl(PR_SET_PDEATHSIG, SIGKILL);   // when this thread ends: see above
    if (getppid() != parent) _exit(1);  // the process died before prctl
    dup2(fds.out, STDOUT_FILENO);
    if (fds.err >= 0) dup2(fds.err, STDERR_FILENO);
    fcntl(fds.secret, F_SETFD, 0);  // inherited across exec: its --auth-file
    execv(argv_[0], argv_.data());
    _exit(127);
  }
  const int forkErrno = errno;
  {
    std::lock_guard<std::mutex> lock(mu_);
    forked_ = true;
    pid_ = pid;
    forkErrno_ = pid < 0 ? forkErrno : 0;
    if (pid < 0) exited_ = true;
  }
  ended_.notify_all();
  if (pid < 0) return;
  // Seen ended first, reaped after: until then the pid cannot be reused, so
  // the destructor may still signal it.
  siginfo_t info{};
  int r;
  do {
    r = waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT);
  } while (r != 0 && errno == EINTR);
  std::string how;
  if (r != 0) {
    how = "ended (waitid: " + std::string(strerror(errno)) + ")";  // SIGCHLD ignored
  } else if (info.si_code == CLD_EXITED) {
    how = "exited with status " + std::to_string(info.si_status);
  } else {
    how = "was killed by signal " + std::to_string(info.si_status);
  }
  bool news;
  {
    std::lock_guard<std::mutex> lock(mu_);
    exited_ = true;
    how_ = how;
    news = !stopping_;
  }
  if (r == 0) waitpid(pid_, nullptr, 0);
  if (news) {
    RINA_WARN("local rina-switchd (pid %d) %s; INA through it is lost", static_cast<int>(pid_),
              how.c_str());
  }
  ended_.notify_all();
}

bool LocalSwitchd::exited(std::string* how) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (exited_ && how) *how = how_;
  return exited_;
}

LocalSwitchd::~LocalSwitchd() {
  if (control_.port != 0) {
    std::lock_guard<std::mutex> lock(secretsMutex());
    secrets().erase(control_.toString());
  }
  if (!reaper_.joinable()) return;
  {
    std::unique_lock<std::mutex> lock(mu_);
    stopping_ = true;
    if (!exited_) ::kill(pid_, SIGTERM);
    if (!ended_.wait_for(lock, std::chrono::seconds(2), [this] { return exited_; })) {
      ::kill(pid_, SIGKILL);
    }
  }
  reaper_.join();
}

}  // namespace rina::ina
