// A grow on one host keeps the host segment while it has spare slots
// (RINA_SHM_SPARE_SLOTS) and makes a new one when they are used up; after
// each grow and shrink the collectives are exact against the members'
// serial sums, and at the end no /dev/shm name is left. Which segment the
// ranks share is seen from outside: its name in /dev/shm (a new segment
// has a new name, and the old one goes when rank 0 destroys the old
// communicator).
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <future>
#include <latch>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "elastic_checks.h"
#include "member_values.h"
#include "rank_harness.h"

namespace rina::testing {
namespace {

// This process's /dev/shm names that begin with "rina-<pid>-" + kind.
std::set<std::string> shmNames(const std::string& kind) {
  const std::string prefix = "rina-" + std::to_string(getpid()) + "-" + kind;
  std::set<std::string> names;
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d)) {
      if (std::string(e->d_name).rfind(prefix, 0) == 0) names.insert(e->d_name);
    }
    closedir(d);
  }
  return names;
}

const std::vector<size_t> kCounts = {3, 5000, 250000};

// A grow by nNew (> 0) or a shrink that leaves out the rank `out` of the
// communicator as it is at that step.
struct Step {
  int nNew = 0;
  int out = -1;
};

// Runs steps on n0 thread ranks (identities 0..n0-1); joiners are threads
// with identities 100, 101, ... that go on through the later steps. After
// each step every member checks exact allreduces, and rank 0 (which keeps
// slot 0 of the host segment: no step leaves it out) records the group
// segments' names before it destroys the communicator the step came from.
class StepRunner {
 public:
  StepRunner(int n0, std::vector<Step> steps) : steps_(std::move(steps)), ids_(steps_.size()) {
    std::vector<int> members;
    for (int r = 0; r < n0; ++r) members.push_back(r);
    int joiner = 100;
    for (const Step& s : steps_) {
      membersBefore_.push_back(members);
      if (s.nNew > 0) {
        for (int j = 0; j < s.nNew; ++j) members.push_back(joiner++);
      } else {
        members.erase(members.begin() + s.out);
      }
    }
    membersBefore_.push_back(members);
    for (auto& p : ids_) idFutures_.push_back(p.get_future().share());
    for (const Step& s : steps_)
      shrunk_.push_back(std::make_unique<std::latch>(s.nNew > 0 ? 0 : 1));
    names_.resize(steps_.size() + 1);
  }

  void run() {
    const int n0 = static_cast<int>(membersBefore_[0].size());
    runThreads(n0, [&](int rank, rinaComm_t comm) {
      if (rank == 0) names_[0] = shmNames("g-");
      follow(comm, membersBefore_[0][rank], 0, /*owned=*/false);
    });
    for (std::thread& t : joiners_) t.join();
  }
  // The group segment names rank 0 saw before step 0 and after each step.
  const std::vector<std::set<std::string>>& names() const { return names_; }

 private:
  void follow(rinaComm_t comm, int identity, size_t from, bool owned) {
    for (size_t s = from; s < steps_.size(); ++s) {
      const std::vector<int>& before = membersBefore_[s];
      const int rank =
          static_cast<int>(std::find(before.begin(), before.end(), identity) - before.begin());
      rinaComm_t next = nullptr;
      if (steps_[s].nNew > 0) {
        if (rank == 0) startJoiners(s);
        if (rank == 0) {
          rinaUniqueId fresh;
          ASSERT_EQ(rinaGetUniqueId(&fresh), rinaSuccess);
          ids_[s].set_value(fresh);
        }
        ASSERT_EQ(rinaCommGrow(comm, steps_[s].nNew, idFutures_[s].get(), &next), rinaSuccess)
            << "step " << s << ": " << rinaCommGetLastError(comm);
      } else if (rank == steps_[s].out) {
        shrunk_[s]->wait();  // alive until the others have shrunk it away
        if (owned) {
          EXPECT_EQ(rinaCommDestroy(comm), rinaSuccess);
        }
        return;
      } else {
        const int out[] = {steps_[s].out};
        ASSERT_EQ(rinaCommShrink(comm, out, 1, &next, RINA_SHRINK_DEFAULT), rinaSuccess)
            << "step " << s << ": " << rinaCommGetLastError(comm);
        if (rank == 0) shrunk_[s]->count_down();
      }
      EXPECT_TRUE(exactMemberAllReduces(next, membersBefore_[s + 1], kCounts)) << "step " << s;
      if (rank == 0) names_[s + 1] = shmNames("g-");
      if (owned) {
        EXPECT_EQ(rinaCommDestroy(comm), rinaSuccess);
      }
      comm = next;
      owned = true;
    }
    EXPECT_EQ(rinaCommDestroy(comm), rinaSuccess);
  }

  void startJoiners(size_t s) {
    const int total = static_cast<int>(membersBefore_[s + 1].size());
    std::lock_guard<std::mutex> lock(joinersMutex_);
    for (int j = 0; j < steps_[s].nNew; ++j) {
      const int rank = total - steps_[s].nNew + j;
      const int identity = membersBefore_[s + 1][rank];
      joiners_.emplace_back([this, s, total, rank, identity] {
        rinaComm_t comm = nullptr;
        ASSERT_EQ(rinaCommJoin(&comm, total, idFutures_[s].get(), rank), rinaSuccess)
            << "step " << s << ": " << rinaCommGetLastError(nullptr);
        EXPECT_TRUE(exactMemberAllReduces(comm, membersBefore_[s + 1], kCounts)) << "step " << s;
        follow(comm, identity, s + 1, /*owned=*/true);
      });
    }
  }

  std::vector<Step> steps_;
  std::vector<std::vector<int>> membersBefore_;  // [s]: identities by rank before step s
  std::vector<std::promise<rinaUniqueId>> ids_;
  std::vector<std::shared_future<rinaUniqueId>> idFutures_;
  std::vector<std::unique_ptr<std::latch>> shrunk_;
  std::vector<std::set<std::string>> names_;
  std::mutex joinersMutex_;
  std::vector<std::thread> joiners_;
};

TEST(GrowSegment, JoinersFitTheSpareSlots) {
  ScopedEnv spares("RINA_SHM_SPARE_SLOTS", "2");
  StepRunner steps(4, {{.nNew = 2}});
  steps.run();
  ASSERT_EQ(steps.names()[0].size(), 1u);
  EXPECT_EQ(steps.names()[1], steps.names()[0]) << "the grown communicator has a new segment";
  EXPECT_TRUE(shmNames("").empty()) << *shmNames("").begin();
}

TEST(GrowSegment, JoinersBeyondTheSpareSlotsGetANewSegment) {
  ScopedEnv spares("RINA_SHM_SPARE_SLOTS", "1");
  StepRunner steps(3, {{.nNew = 2}});
  steps.run();
  ASSERT_EQ(steps.names()[0].size(), 1u);
  // The old segment is still there (rank 0 has not destroyed the
  // communicator it grew from), and a new one beside it.
  EXPECT_EQ(steps.names()[1].size(), 2u);
  EXPECT_TRUE(steps.names()[1].count(*steps.names()[0].begin()));
  EXPECT_TRUE(shmNames("").empty()) << *shmNames("").begin();
}

TEST(GrowSegment, NoSparesMeansANewSegmentAndNoNameLeftBehind) {
  ScopedEnv spares("RINA_SHM_SPARE_SLOTS", "0");
  StepRunner steps(3, {{.nNew = 1}});
  steps.run();
  // Without spares the name goes once every rank has mapped the segment.
  EXPECT_TRUE(steps.names()[0].empty());
  EXPECT_TRUE(steps.names()[1].empty());
  EXPECT_TRUE(shmNames("").empty()) << *shmNames("").begin();
}

// Grows and shrinks in turn: the spare slots are used up (a slot a shrink
// frees is not given out again), the next grow makes a new segment with
// spares of its own, and the one after uses them.
TEST(GrowSegment, RepeatedGrowsAndShrinksLeaveNoSegment) {
  ScopedEnv spares("RINA_SHM_SPARE_SLOTS", "2");
  StepRunner steps(3, {{.nNew = 1}, {.out = 1}, {.nNew = 1}, {.nNew = 1}, {.nNew = 1}, {.out = 2}});
  steps.run();
  const auto& n = steps.names();
  ASSERT_EQ(n[0].size(), 1u);
  EXPECT_EQ(n[1], n[0]);  // a spare slot
  EXPECT_EQ(n[2], n[0]);  // a shrink keeps the segment
  EXPECT_EQ(n[3], n[0]);  // the last spare slot
  ASSERT_EQ(n[4].size(), 2u) << "no spare slot left: a new segment beside the old";
  std::set<std::string> fresh = n[4];
  fresh.erase(*n[0].begin());
  ASSERT_EQ(fresh.size(), 1u);
  EXPECT_EQ(n[5], fresh);  // the new segment's spare slot
  EXPECT_EQ(n[6], fresh);
  EXPECT_TRUE(shmNames("").empty()) << *shmNames("").begin();
}

}  // namespace
}  // namespace rina::testing
