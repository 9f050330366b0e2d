#include "ina/local_switchd.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
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
#include "inanet/ctrl_auth.h"
#include "inanet/net.h"

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
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/rina-switchd-XXXXXX";
  if (!mkdtemp(dir.data())) return systemErrorf(errno, "rina-switchd: mkdtemp %s", dir.c_str());
  sw->authDir_ = dir;
  std::string error, secret;
  if (!writeSecretFile(dir + "/auth", &error)) {
    return errorf(rinaSystemError, "rina-switchd: %s", error.c_str());
  }
  sw->authFile_ = dir + "/auth";
  if (!readSecretFile(sw->authFile_, &secret, &error)) {
    return errorf(rinaSystemError, "rina-switchd: %s", error.c_str());
  }
  std::vector<std::string> args = {path,        "--listen",    "127.0.0.1:0",
                                   "--control", "127.0.0.1:0", "--payload",
                                   "2048",      "--auth-file", sw->authFile_};
  args.insert(args.end(), extraArgs.begin(), extraArgs.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int pipeFds[2];
  if (pipe2(pipeFds, O_CLOEXEC) != 0) return systemErrorf(errno, "rina-switchd: pipe");
  Fd reader(pipeFds[0]);
  // Its final stats go to stderr: shown from RINA_DEBUG=INFO on.
  Fd devNull(logLevel() >= LogLevel::kInfo ? -1 : open("/dev/null", O_WRONLY | O_CLOEXEC));
  pid_t pid = fork();
  if (pid < 0) {
    close(pipeFds[1]);
    return systemErrorf(errno, "rina-switchd: fork");
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the rank that started it
    dup2(pipeFds[1], STDOUT_FILENO);
    if (devNull.valid()) dup2(devNull.get(), STDERR_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(pipeFds[1]);
  sw->pid_ = pid;
  sw->reaper_ = std::thread([raw = sw.get()] { raw->reap(); });
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

void LocalSwitchd::reap() {
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
  if (!authFile_.empty()) ::unlink(authFile_.c_str());
  if (!authDir_.empty()) ::rmdir(authDir_.c_str());
  if (pid_ <= 0) return;
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
