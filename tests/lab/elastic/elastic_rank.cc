// One process of the elastic lab test (netlab_elastic_test.sh): a rank
// that lives through rounds in which a worker is killed (the survivors
// revoke, shrink and are exact on the switch; a new process joins with a
// grow) or a rack's switch is killed and started again (the rack falls back
// and returns at a plan check). Only the public C API is used. Processes
// meet through files in a shared folder (the lab's hosts share the file
// system): the script writes the plan and what it did, the ranks write what
// they reached and what they measured.
//
// Each process has an identity, its lab host's index (a joiner takes the
// index of the host it replaces), and contributes memberInt / memberFloat
// of it; every sum is checked against the serial sum over the identities of
// the communicator's ranks, which every process follows from the plan (a
// shrink drops the killed host's identity, a grow appends it).
//
//   netlab_elastic_rank DIR HOST_INDEX [--join ROUND]
//
// DIR/plan, one line per round: "worker H" (the script kills host H's rank
// during the round's loop) or "switch RACK" (it kills rack RACK's switch
// and starts it again); then the knobs: "hosts N", "loop_elems N",
// "sizes A,B,C", "calls N" and, per INA rack, "rack a:0,1,2" (its hosts).
#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../../support/member_values.h"
#include "rina/rina.h"

namespace {

using Clock = std::chrono::steady_clock;
using rina::testing::firstWrongFloat;
using rina::testing::firstWrongInt;
using rina::testing::memberFloats;
using rina::testing::memberInts;

std::string dir;
int me = -1;  // this process's identity (host index)

[[noreturn]] void die(const std::string& why) {
  fprintf(stderr, "elastic host %d: FAIL: %s\n", me, why.c_str());
  std::ofstream(dir + "/failed." + std::to_string(me)) << why << "\n";
  _exit(1);
}

void note(const std::string& what) { fprintf(stderr, "elastic host %d: %s\n", me, what.c_str()); }

// Written whole (a rename), so a reader never sees half of it.
void writeFile(const std::string& name, const std::string& content) {
  const std::string tmp = dir + "/." + name + "." + std::to_string(getpid());
  std::ofstream(tmp, std::ios::binary) << content;
  if (rename(tmp.c_str(), (dir + "/" + name).c_str()) != 0) die("rename " + name);
}

std::string waitFile(const std::string& name, int timeoutS) {
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(timeoutS);
  for (;;) {
    std::ifstream f(dir + "/" + name, std::ios::binary);
    if (f) return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    if (Clock::now() > deadline) die("no " + name + " after " + std::to_string(timeoutS) + " s");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

struct Plan {
  std::vector<std::pair<std::string, std::string>> rounds;  // ("worker", "3"), ("switch", "a")
  int hosts = 0;
  size_t loopElems = 0;
  std::vector<size_t> sizes;
  int calls = 100;
  std::map<std::string, std::vector<int>> racks;  // INA rack -> host indices
};

Plan readPlan() {
  Plan p;
  std::istringstream in(waitFile("plan", 60));
  std::string key, value;
  while (in >> key >> value) {
    if (key == "worker" || key == "switch") {
      p.rounds.emplace_back(key, value);
    } else if (key == "hosts") {
      p.hosts = std::stoi(value);
    } else if (key == "loop_elems") {
      p.loopElems = std::stoul(value);
    } else if (key == "calls") {
      p.calls = std::stoi(value);
    } else if (key == "sizes") {
      std::istringstream s(value);
      for (std::string part; std::getline(s, part, ',');) p.sizes.push_back(std::stoul(part));
    } else if (key == "rack") {
      const size_t colon = value.find(':');
      std::istringstream s(value.substr(colon + 1));
      for (std::string part; std::getline(s, part, ',');) {
        p.racks[value.substr(0, colon)].push_back(std::stoi(part));
      }
    }
  }
  if (p.hosts < 2 || p.loopElems == 0 || p.sizes.empty()) die("incomplete plan");
  return p;
}

std::string lastError(rinaComm_t comm) { return rinaCommGetLastError(comm); }

int rankOf(rinaComm_t comm) {
  int r = -1;
  rinaCommUserRank(comm, &r);
  return r;
}

rinaCommStats_t statsOf(rinaComm_t comm) {
  rinaCommStats_t s{};
  s.size = sizeof s;
  if (rinaCommGetStats(comm, &s) != rinaSuccess) die("rinaCommGetStats: " + lastError(comm));
  return s;
}

// One allreduce of count elements of int32 or float32, checked exact;
// returns the call's result (a failure other than a wrong sum is the
// caller's to judge).
rinaResult_t exactAllReduce(rinaComm_t comm, const std::vector<int>& ids, size_t count, bool ints) {
  const int r = rankOf(comm);
  rinaResult_t rc;
  long wrong;
  if (ints) {
    std::vector<int32_t> v = memberInts(ids[r], count);
    rc = rinaAllReduce(v.data(), v.data(), count, rinaInt32, rinaSum, comm);
    wrong = rc == rinaSuccess ? firstWrongInt(v, ids) : -1;
  } else {
    std::vector<float> v = memberFloats(ids[r], count);
    rc = rinaAllReduce(v.data(), v.data(), count, rinaFloat32, rinaSum, comm);
    wrong = rc == rinaSuccess ? firstWrongFloat(v, ids) : -1;
  }
  if (wrong >= 0) {
    die("allreduce of " + std::to_string(count) + (ints ? " int32" : " float32") + ": element " +
        std::to_string(wrong) + " is wrong");
  }
  return rc;
}

// Whether msg names rank v as the peer that failed ("peer 3 hung up", ...).
bool namesPeer(const std::string& msg, int v) {
  const std::string key = "peer " + std::to_string(v);
  for (size_t at = msg.find(key); at != std::string::npos; at = msg.find(key, at + 1)) {
    const char next = at + key.size() < msg.size() ? msg[at + key.size()] : ' ';
    if (next < '0' || next > '9') return true;
  }
  return false;
}

int countEntries(const char* path, const std::string& prefix = "") {
  DIR* d = opendir(path);
  if (!d) return -1;
  int n = 0;
  while (const dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0) ++n;
  }
  closedir(d);
  return n;
}

struct Counts {
  int fds, threads, shm;
};
Counts countsNow() {
  return {countEntries("/proc/self/fd") - 1, countEntries("/proc/self/task"),
          countEntries("/dev/shm", "rina-" + std::to_string(getpid()) + "-")};
}

// A round in which the script kills host victim's rank mid-loop.
void workerRound(const Plan& plan, int round, int victim, rinaComm_t* comm, std::vector<int>* ids) {
  const std::string r = std::to_string(round);
  std::vector<int>& order = *ids;
  // 1. The loop the kill interrupts.
  rinaResult_t rc = rinaSuccess;
  const Clock::time_point loopStart = Clock::now();
  for (long i = 0; rc == rinaSuccess; ++i) {
    rc = exactAllReduce(*comm, order, plan.loopElems, false);
    if (i == 0 && rc == rinaSuccess) writeFile("loop." + r + "." + std::to_string(me), "");
    if (Clock::now() - loopStart > std::chrono::seconds(300)) die("the loop never failed");
  }
  const std::string first = lastError(*comm);
  // 2. The error names the killed rank (a revoke carries the revoker's error).
  const int v = std::stoi(waitFile("killed." + r, 120));
  if (v != victim) die("the script killed host " + std::to_string(v));
  const int victimRank =
      static_cast<int>(std::find(order.begin(), order.end(), victim) - order.begin());
  if ((rc != rinaRemoteError && rc != rinaRevoked) || !namesPeer(first, victimRank)) {
    die("round " + r + ": the error does not name rank " + std::to_string(victimRank) + ": " +
        rinaGetErrorString(rc) + ": " + first);
  }
  note("round " + r + ": " + rinaGetErrorString(rc) + ": " + first);
  rinaCommRevoke(*comm);
  rinaComm_t shrunk = nullptr;
  const Clock::time_point t0 = Clock::now();
  if (rinaCommShrink(*comm, &victimRank, 1, &shrunk, RINA_SHRINK_DEFAULT) != rinaSuccess) {
    die("round " + r + ": rinaCommShrink: " + lastError(*comm));
  }
  const double shrinkMs = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  order.erase(order.begin() + victimRank);
  // 3. The next calls are exact, and a rack's ranks sum on its switch.
  const rinaCommStats_t before = statsOf(shrunk);
  for (int i = 0; i < plan.calls; ++i) {
    if (exactAllReduce(shrunk, order, plan.sizes[i % plan.sizes.size()], i % 2 == 0) !=
        rinaSuccess) {
      die("round " + r + ": allreduce " + std::to_string(i) +
          " after the shrink: " + lastError(shrunk));
    }
  }
  const rinaCommStats_t after = statsOf(shrunk);
  writeFile("shrunk." + r + "." + std::to_string(me),
            "shrink_ms " + std::to_string(shrinkMs) + " ina_calls " +
                std::to_string(after.inaCalls - before.inaCalls) + " fallbacks " +
                std::to_string(after.inaFallbacks) + "\n");
  // 4. Once the script has looked at the switches, a new process joins
  // with a grow (in the killed one's place: the survivors' order, then it);
  // the next allreduce includes it.
  waitFile("go." + r, 120);
  if (rankOf(shrunk) == 0) {
    rinaUniqueId id;
    if (rinaGetUniqueId(&id) != rinaSuccess) die("rinaGetUniqueId: " + lastError(nullptr));
    std::string grownOrder;
    for (int h : order) grownOrder += std::to_string(h) + " ";
    writeFile("order." + r, grownOrder + std::to_string(victim) + "\n");
    writeFile("grow." + r, std::string(id.internal, sizeof id.internal));
  }
  rinaUniqueId id;
  std::memcpy(id.internal, waitFile("grow." + r, 120).data(), sizeof id.internal);
  rinaComm_t grown = nullptr;
  if (rinaCommGrow(shrunk, 1, id, &grown) != rinaSuccess) {
    die("round " + r + ": rinaCommGrow: " + lastError(shrunk));
  }
  order.push_back(victim);
  if (exactAllReduce(grown, order, plan.sizes.back(), true) != rinaSuccess) {
    die("round " + r + ": the first allreduce with the joiner: " + lastError(grown));
  }
  writeFile("grown." + r + "." + std::to_string(me), "");
  rinaCommDestroy(shrunk);
  rinaCommDestroy(*comm);
  *comm = grown;
}

// A round in which the script kills a rack's switch and starts it again:
// calls stay exact, the rack falls back and then returns to the switch.
void switchRound(const Plan& plan, int round, const std::string& rack, rinaComm_t comm,
                 const std::vector<int>& order) {
  const std::string r = std::to_string(round);
  const std::vector<int>& hosts = plan.racks.at(rack);
  const bool inRack = std::find(hosts.begin(), hosts.end(), me) != hosts.end();
  const rinaCommStats_t start = statsOf(comm);
  bool fellBack = false;
  const Clock::time_point loopStart = Clock::now();
  for (long i = 0;; ++i) {
    if (exactAllReduce(comm, order, plan.loopElems, i % 2 == 0) != rinaSuccess) {
      die("round " + r + ": allreduce " + std::to_string(i) + ": " + lastError(comm));
    }
    if (i == 0) writeFile("loop." + r + "." + std::to_string(me), "");
    const rinaCommStats_t now = statsOf(comm);
    if (inRack && !fellBack && now.inaFallbacks > start.inaFallbacks) {
      fellBack = true;
      writeFile("fell." + r + "." + std::to_string(me), "");
    }
    // Every rank goes on until the rack's ranks are all back on the switch.
    int32_t back = !inRack || now.inaReturns > start.inaReturns ? 1 : 0;
    if (rinaAllReduce(&back, &back, 1, rinaInt32, rinaMin, comm) != rinaSuccess) {
      die("round " + r + ": " + lastError(comm));
    }
    if (back) break;
    if (Clock::now() - loopStart > std::chrono::seconds(300)) die("the rack never returned");
  }
  const rinaCommStats_t end = statsOf(comm);
  writeFile("returned." + r + "." + std::to_string(me),
            "fallbacks " + std::to_string(end.inaFallbacks - start.inaFallbacks) + " returns " +
                std::to_string(end.inaReturns - start.inaReturns) + "\n");
  waitFile("go." + r, 120);  // the script looks at the switch first
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: netlab_elastic_rank DIR HOST_INDEX [--join ROUND]\n");
    return 2;
  }
  dir = argv[1];
  me = std::atoi(argv[2]);
  const int joinRound = argc >= 5 && std::strcmp(argv[3], "--join") == 0 ? std::atoi(argv[4]) : 0;
  const Counts initial = countsNow();
  writeFile("pid." + std::to_string(me), std::to_string(getpid()));
  const Plan plan = readPlan();
  std::vector<int> order;
  rinaComm_t comm = nullptr;
  if (joinRound == 0) {
    for (int h = 0; h < plan.hosts; ++h) order.push_back(h);
    if (me == 0) {
      rinaUniqueId id;
      if (rinaGetUniqueId(&id) != rinaSuccess) die("rinaGetUniqueId: " + lastError(nullptr));
      writeFile("id", std::string(id.internal, sizeof id.internal));
    }
    rinaUniqueId id;
    std::memcpy(id.internal, waitFile("id", 120).data(), sizeof id.internal);
    if (rinaCommInitRank(&comm, plan.hosts, id, me) != rinaSuccess) {
      die("rinaCommInitRank: " + lastError(nullptr));
    }
  } else {
    // In the place of the host's killed rank: the survivors' order, then this one.
    const std::string r = std::to_string(joinRound);
    std::istringstream in(waitFile("order." + r, 120));
    for (int h; in >> h;) order.push_back(h);
    rinaUniqueId id;
    std::memcpy(id.internal, waitFile("grow." + r, 120).data(), sizeof id.internal);
    const int n = static_cast<int>(order.size());
    if (rinaCommJoin(&comm, n, id, n - 1) != rinaSuccess)
      die("rinaCommJoin: " + lastError(nullptr));
    if (exactAllReduce(comm, order, plan.sizes.back(), true) != rinaSuccess) {
      die("the first allreduce after joining: " + lastError(comm));
    }
    writeFile("grown." + r + "." + std::to_string(me), "");
  }
  for (int round = joinRound + 1; round <= static_cast<int>(plan.rounds.size()); ++round) {
    const auto& [kind, what] = plan.rounds[round - 1];
    if (kind == "worker") {
      workerRound(plan, round, std::stoi(what), &comm, &order);
    } else {
      switchRound(plan, round, what, comm, order);
    }
  }
  rinaCommDestroy(comm);
  // Nothing of the communicators is left: descriptors, threads (the unique
  // ids' root threads end on their own: waited for, bounded), /dev/shm names.
  Counts now = countsNow();
  for (int i = 0; i < 500 && (now.fds != initial.fds || now.threads != initial.threads); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    now = countsNow();
  }
  writeFile("final." + std::to_string(me),
            "fds " + std::to_string(initial.fds) + " " + std::to_string(now.fds) + " threads " +
                std::to_string(initial.threads) + " " + std::to_string(now.threads) + " shm " +
                std::to_string(now.shm) + "\n");
  if (now.fds != initial.fds || now.threads != initial.threads || now.shm != 0) {
    die("left behind: fds " + std::to_string(initial.fds) + " -> " + std::to_string(now.fds) +
        ", threads " + std::to_string(initial.threads) + " -> " + std::to_string(now.threads) +
        ", /dev/shm names " + std::to_string(now.shm));
  }
  note("done");
  return 0;
}
