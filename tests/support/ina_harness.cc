#include "ina_harness.h"

#include <dirent.h>
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
#include <set>
#include <thread>

#include "rina/ina_wire.h"
#include "wire/ctrl_auth.h"

namespace rina::ina::testing {
namespace {

// The INA tests exercise the switch path, so every INA rack of theirs is
// on its switch (RINA_PLAN_INA=on) unless the environment or a test says
// otherwise: the plan would make small racks beside autonomous hosts
// autonomous. The plan's per-rack choice has tests of their own
// (RINA_PLAN_INA=choose).
const bool kEveryInaRackOnItsSwitch = [] { return setenv("RINA_PLAN_INA", "on", 0) == 0; }();

// The sender of a gated worker: datagrams before the gate's slice go at
// once, the rest after SliceGate::pass. inner is attached after the client
// exists when it is the client's own UDP socket.
class GatedSender : public InaSender {
 public:
  GatedSender(SliceGate& gate, std::unique_ptr<InaSender> inner)
      : gate_(gate), inner_(std::move(inner)) {}
  bool attached() const { return inner_ != nullptr; }
  void attach(std::unique_ptr<InaSender> inner) { inner_ = std::move(inner); }
  const char* name() const override { return inner_->name(); }
  Status setGrant(const Grant& grant) override { return inner_->setGrant(grant); }
  Status send(std::span<const OutDatagram> batch) override {
    // The first datagram the gate holds splits the batch: those before it
    // leave now, it and the rest once the gate lets it pass.
    for (size_t k = 0; k < batch.size(); ++k) {
      Header h;
      if (decode(batch[k].bytes, &h) != DecodeError::kOk || !gate_.holds(h.seq)) continue;
      if (k > 0) RINA_TRY(inner_->send(batch.first(k)));
      gate_.pass(h.seq);
      return inner_->send(batch.subspan(k));
    }
    return inner_->send(batch);
  }

 private:
  SliceGate& gate_;
  std::unique_ptr<InaSender> inner_;
};

}  // namespace

bool SliceGate::waitHolding(int timeoutMs) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, std::chrono::milliseconds(timeoutMs), [&] { return holding_; });
}

void SliceGate::open() {
  std::lock_guard<std::mutex> lock(mu_);
  open_ = true;
  cv_.notify_all();
}

bool SliceGate::expired() const {
  std::lock_guard<std::mutex> lock(mu_);
  return expired_;
}

bool SliceGate::holds(uint32_t seq) const {
  std::lock_guard<std::mutex> lock(mu_);
  return !open_ && seq >= fromSeq_;
}

void SliceGate::pass(uint32_t seq) {
  std::unique_lock<std::mutex> lock(mu_);
  if (open_ || seq < fromSeq_) return;
  holding_ = true;
  cv_.notify_all();
  if (!cv_.wait_for(lock, std::chrono::milliseconds(kHoldLimitMs), [&] { return open_; })) {
    expired_ = true;
    open_ = true;
  }
}

bool waitForNotices(CtrlClient& ctrl, int timeoutMs, std::vector<PreemptNotice>* notices) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
  for (;;) {
    std::vector<PreemptNotice> got = ctrl.takeNotices();
    notices->insert(notices->end(), got.begin(), got.end());
    if (!got.empty()) return true;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || ctrl.closed()) return false;
    pollfd p{ctrl.fd(), POLLIN, 0};
    ::poll(&p, 1, static_cast<int>(left.count()));
  }
}

SecretDir::SecretDir() {
  char dir[] = "/tmp/rina-switch-secret-XXXXXX";
  if (mkdtemp(dir)) dir_ = dir;
  std::string error;
  ok_ = !dir_.empty() && writeSecretFile(file(), &error);
}

SecretDir::~SecretDir() {
  unlink(file().c_str());
  rmdir(dir_.c_str());
}

std::vector<long long> jsonFields(const std::string& json, const std::string& name) {
  const std::string key = "\"" + name + "\":";
  std::vector<long long> out;
  for (size_t at = json.find(key); at != std::string::npos; at = json.find(key, at + 1)) {
    out.push_back(std::atoll(json.c_str() + at + key.size()));
  }
  return out;
}

long long jsonField(const std::string& json, const std::string& name) {
  const std::vector<long long> all = jsonFields(json, name);
  return all.empty() ? -1 : all.front();
}

SwitchdProcess::SwitchdProcess(const std::vector<std::string>& flags,
                               const std::vector<std::string>& launcher,
                               const std::string& address) {
  int out[2];
  if (pipe(out) != 0) return;
  std::vector<std::string> args = launcher;
  for (const char* a : {RINA_SWITCHD_PATH, "--listen"}) args.push_back(a);
  args.push_back(address + ":0");
  args.push_back("--control");
  args.push_back(address + ":0");
  args.insert(args.end(), flags.begin(), flags.end());
  // Built before fork(): the child of a process with threads must not allocate.
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_ = fork();
  if (pid_ == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the test
    dup2(out[1], STDOUT_FILENO);
    close(out[0]);
    close(out[1]);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  close(out[1]);
  Fd reader(out[0]);
  fcntl(reader.get(), F_SETFL, O_NONBLOCK);
  LineReader lines;
  std::string line;
  if (!readLine(reader.get(), lines, 10000, &line).ok()) return;
  // "rina-switchd ready data=A:P ports=N control=A:P slots=.. payload=.."
  char data[64], control[64];
  unsigned ports = 0;
  if (sscanf(line.c_str(), "rina-switchd ready data=%63s ports=%u control=%63s", data, &ports,
             control) != 3) {
    return;
  }
  ready_ = parseEndpoint(data, &data_) && parseEndpoint(control, &control_);
  size_t roce = line.find(" roce=");
  if (roce != std::string::npos) {
    char roceText[64];
    if (sscanf(line.c_str() + roce, " roce=%63s", roceText) == 1 &&
        std::string(roceText) != "off") {
      ready_ = ready_ && parseEndpoint(roceText, &roce_);
    }
  }
}

SwitchdProcess::~SwitchdProcess() { kill(); }

void SwitchdProcess::kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGCONT);  // a paused switch must run to see SIGTERM
  ::kill(pid_, SIGTERM);
  for (int i = 0; i < 200; ++i) {  // up to 2 s
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    poll(nullptr, 0, 10);
  }
  ::kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

namespace {

// Whether every thread of pid is stopped (state T in /proc/PID/task/*/stat).
bool allThreadsStopped(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = opendir(dir.c_str());
  if (!d) return false;
  bool stopped = true;
  int threads = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    ++threads;
    std::FILE* f = std::fopen((dir + "/" + e->d_name + "/stat").c_str(), "r");
    char line[512] = {};
    const bool read = f && std::fgets(line, sizeof line, f);
    if (f) std::fclose(f);
    // The state follows the command name's closing parenthesis.
    const char* paren = read ? std::strrchr(line, ')') : nullptr;
    if (!paren || (paren[2] != 'T' && paren[2] != 't')) stopped = false;
  }
  closedir(d);
  return stopped && threads > 0;
}

}  // namespace

void SwitchdProcess::pause() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGSTOP);
  // kill() only queues the signal: wait until every thread has stopped, so
  // nothing sent after pause() returns is answered (bounded: 5 s).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!allThreadsStopped(pid_) && std::chrono::steady_clock::now() < deadline) {
    poll(nullptr, 0, 1);
  }
  if (!allThreadsStopped(pid_)) {
    std::fprintf(stderr, "SwitchdProcess::pause: switch %d not stopped after 5 s\n",
                 static_cast<int>(pid_));
  }
}

void SwitchdProcess::resume() {
  if (pid_ > 0) ::kill(pid_, SIGCONT);
}

std::string SwitchdProcess::query(const std::string& line) const {
  std::unique_ptr<CtrlClient> c;
  std::string reply;
  if (!CtrlClient::connect(control_, 2000, &c).ok() || !c->query(line, &reply).ok()) return "";
  return reply;
}

long long SwitchdProcess::statsField(const std::string& name) const {
  std::string json = query("STATS");
  size_t p = json.find("\"" + name + "\":");
  if (p == std::string::npos) return -1;
  return std::atoll(json.c_str() + p + name.size() + 3);
}

Status Rack::create(const SwitchdProcess& sw, int k, const RackOptions& options,
                    std::unique_ptr<Rack>* out) {
  auto rack = std::make_unique<Rack>();
  CtrlRequest reg;
  reg.verb = CtrlVerb::kRegister;
  reg.job = options.job;
  reg.token = options.token;
  reg.fanIn = static_cast<uint8_t>(k);
  reg.priority = options.priority;
  reg.slots = options.slots;
  for (int w = 0; w < k; ++w) {
    InaClientOptions o = options.client;
    o.switchAddr = sw.data().addr;
    o.job = options.job;
    o.token = options.token;
    o.worker = static_cast<uint8_t>(w);
    o.fanIn = static_cast<uint8_t>(k);
    std::unique_ptr<InaSender> sender = options.sender ? options.sender(w) : nullptr;
    GatedSender* gated = nullptr;
    if (options.gate && w == options.gatedWorker) {
      auto g = std::make_unique<GatedSender>(*options.gate, std::move(sender));
      gated = g.get();
      sender = std::move(g);
    }
    std::unique_ptr<InaClient> c;
    RINA_TRY(InaClient::create(o, &c, std::move(sender)));
    // Worker w's own UDP socket exists only now.
    if (gated && !gated->attached()) gated->attach(makeUdpSender(c->fd(), o.switchAddr));
    reg.members.push_back(c->localEndpoint());
    rack->clients_.push_back(std::move(c));
  }
  RINA_TRY(CtrlClient::connect(sw.control(), 5000, &rack->ctrl_));
  Grant g;
  RINA_TRY(rack->ctrl_->registerJob(reg, &g));
  RINA_TRY(rack->setGrant(g));
  rack->markerPrologue_ = options.markerPrologue;
  *out = std::move(rack);
  return Status();
}

Status Rack::setGrant(const Grant& grant) {
  grant_ = grant;
  for (auto& c : clients_) RINA_TRY(c->setGrant(grant));
  return Status();
}

void Rack::allreduce(std::vector<std::vector<uint8_t>>& buffers, size_t count, rinaDataType_t type,
                     std::vector<Status>* statuses, std::vector<InaCallResult>* results,
                     const std::vector<const void*>& upstream, int port) {
  statuses->assign(clients_.size(), Status());
  results->assign(clients_.size(), InaCallResult{});
  std::vector<std::thread> threads;
  for (size_t w = 0; w < clients_.size(); ++w) {
    threads.emplace_back([&, w] {
      InaCallOptions call;
      call.upstreamPartial = w < upstream.size() ? upstream[w] : nullptr;
      call.resultToPortOnly = port >= 0;
      call.isPort = static_cast<int>(w) == port;
      call.markerPrologue = markerPrologue_;
      (*statuses)[w] = clients_[w]->allreduce(buffers[w].data(), count, type, call, &(*results)[w]);
    });
  }
  for (auto& t : threads) t.join();
}

void Rack::reduceScatter(std::vector<std::vector<uint8_t>>& buffers, size_t count,
                         rinaDataType_t type, const std::vector<std::vector<uint8_t>>& roles,
                         std::vector<Status>* statuses, std::vector<InaCallResult>* results,
                         bool portMarkers) {
  statuses->assign(clients_.size(), Status());
  results->assign(clients_.size(), InaCallResult{});
  std::vector<std::thread> threads;
  for (size_t w = 0; w < clients_.size(); ++w) {
    threads.emplace_back([&, w] {
      InaCallOptions call;
      call.resultToPortOnly = true;
      call.sliceRoles = &roles[w];
      call.portMarkers = portMarkers;
      (*statuses)[w] = clients_[w]->allreduce(buffers[w].data(), count, type, call, &(*results)[w]);
    });
  }
  for (auto& t : threads) t.join();
}

void Rack::broadcast(std::vector<std::vector<uint8_t>>& buffers, size_t bytes, int root,
                     std::vector<Status>* statuses, std::vector<InaBroadcastResult>* results) {
  statuses->assign(clients_.size(), Status());
  results->assign(clients_.size(), InaBroadcastResult{});
  std::vector<std::thread> threads;
  for (size_t w = 0; w < clients_.size(); ++w) {
    threads.emplace_back([&, w] {
      (*statuses)[w] = clients_[w]->broadcast(buffers[w].data(), bytes, static_cast<int>(w) == root,
                                              200, &(*results)[w]);
    });
  }
  for (auto& t : threads) t.join();
}

std::vector<uint32_t> unionOfHostSlices(const std::vector<InaCallResult>& results) {
  std::set<uint32_t> all;
  for (const auto& r : results) all.insert(r.hostSlices.begin(), r.hostSlices.end());
  return {all.begin(), all.end()};
}

}  // namespace rina::ina::testing
