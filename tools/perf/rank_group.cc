#include "perf/rank_group.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <new>

namespace rina::perf {
namespace {

FatalHandler gFatalHandler = nullptr;
int gFatalRank = -1;
const char* gFatalProgram = "rina-allreduce-perf";

std::string thisHostName() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) {
    return "unknown";
  }
  return name;
}

class SingleRankGroup final : public RankGroup {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void barrier() override {}
  double maxOverRanks(double value) override { return value; }
  int64_t sumOverRanks(int64_t value) override { return value; }
  std::vector<std::string> hostNames() override { return {thisHostName()}; }
};

// Lives in a MAP_SHARED mapping made before fork(); a sense-reversing barrier
// on a process-shared mutex and condition variable, plus one slot per rank.
struct SharedBoard {
  pthread_mutex_t mutex;
  pthread_cond_t changed;
  int arrived;
  uint64_t generation;
  // Trailing arrays, nranks each.
  double* doubles() { return reinterpret_cast<double*>(this + 1); }
  int64_t* integers(int nranks) { return reinterpret_cast<int64_t*>(doubles() + nranks); }
  static size_t bytesFor(int nranks) {
    return sizeof(SharedBoard) + static_cast<size_t>(nranks) * (sizeof(double) + sizeof(int64_t));
  }
};

class SharedMemoryRankGroup final : public ForkedRankGroup {
 public:
  SharedMemoryRankGroup(SharedBoard* board, int nranks, int timeoutSeconds)
      : board_(board), nranks_(nranks), timeoutSeconds_(timeoutSeconds) {}
  ~SharedMemoryRankGroup() override { munmap(board_, SharedBoard::bytesFor(nranks_)); }

  void joinAsRank(int rank) override { rank_ = rank; }
  int rank() const override { return rank_; }
  int size() const override { return nranks_; }

  void barrier() override {
    pthread_mutex_lock(&board_->mutex);
    const uint64_t generation = board_->generation;
    if (++board_->arrived == nranks_) {
      board_->arrived = 0;
      ++board_->generation;
      pthread_cond_broadcast(&board_->changed);
    } else {
      timespec deadline{};
      clock_gettime(CLOCK_MONOTONIC, &deadline);
      deadline.tv_sec += timeoutSeconds_;
      while (board_->generation == generation) {
        if (pthread_cond_timedwait(&board_->changed, &board_->mutex, &deadline) == ETIMEDOUT) {
          pthread_mutex_unlock(&board_->mutex);
          fatal(kExitTimeout, "barrier of the forked ranks timed out after " +
                                  std::to_string(timeoutSeconds_) + " s");
        }
      }
    }
    pthread_mutex_unlock(&board_->mutex);
  }

  double maxOverRanks(double value) override {
    board_->doubles()[rank_] = value;
    barrier();
    double result = value;
    for (int r = 0; r < nranks_; ++r) {
      result = std::max(result, board_->doubles()[r]);
    }
    barrier();  // nobody overwrites a slot before everyone has read it
    return result;
  }

  int64_t sumOverRanks(int64_t value) override {
    board_->integers(nranks_)[rank_] = value;
    barrier();
    int64_t result = 0;
    for (int r = 0; r < nranks_; ++r) {
      result += board_->integers(nranks_)[r];
    }
    barrier();
    return result;
  }

  std::vector<std::string> hostNames() override {
    return std::vector<std::string>(static_cast<size_t>(nranks_), thisHostName());
  }

 private:
  SharedBoard* board_;
  int nranks_;
  int timeoutSeconds_;
  int rank_ = 0;
};

}  // namespace

std::unique_ptr<RankGroup> makeSingleRankGroup() { return std::make_unique<SingleRankGroup>(); }

std::unique_ptr<ForkedRankGroup> ForkedRankGroup::create(int nranks, int timeoutSeconds) {
  void* memory = mmap(nullptr, SharedBoard::bytesFor(nranks), PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) {
    fatal(kExitError, "mmap of the shared result board failed");
  }
  auto* board = new (memory) SharedBoard{};
  pthread_mutexattr_t mutexAttr;
  pthread_mutexattr_init(&mutexAttr);
  pthread_mutexattr_setpshared(&mutexAttr, PTHREAD_PROCESS_SHARED);
  pthread_mutex_init(&board->mutex, &mutexAttr);
  pthread_mutexattr_destroy(&mutexAttr);
  pthread_condattr_t condAttr;
  pthread_condattr_init(&condAttr);
  pthread_condattr_setpshared(&condAttr, PTHREAD_PROCESS_SHARED);
  pthread_condattr_setclock(&condAttr, CLOCK_MONOTONIC);
  pthread_cond_init(&board->changed, &condAttr);
  pthread_condattr_destroy(&condAttr);
  return std::make_unique<SharedMemoryRankGroup>(board, nranks, timeoutSeconds);
}

void fatal(int exitCode, const std::string& message) {
  if (gFatalRank >= 0) {
    std::fprintf(stderr, "%s [rank %d]: %s\n", gFatalProgram, gFatalRank, message.c_str());
  } else {
    std::fprintf(stderr, "%s: %s\n", gFatalProgram, message.c_str());
  }
  if (gFatalHandler != nullptr) {
    gFatalHandler(exitCode);
  }
  std::fflush(nullptr);
  _exit(exitCode);
}

void setFatalHandler(FatalHandler handler) { gFatalHandler = handler; }
void setFatalRank(int rank) { gFatalRank = rank; }
void setFatalProgram(const char* program) { gFatalProgram = program; }

}  // namespace rina::perf
