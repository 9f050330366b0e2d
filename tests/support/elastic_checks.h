// What the tests of communicators that change members (shrink, grow,
// split, revoke, racks formed again) check alike: allreduces of member
// values (member_values.h) exact against the members' serial sums, error
// texts, elapsed time, and a rank that stays out of a shrink alive.
#ifndef RINA_TESTS_SUPPORT_ELASTIC_CHECKS_H_
#define RINA_TESTS_SUPPORT_ELASTIC_CHECKS_H_

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <latch>
#include <string>
#include <vector>

#include "member_values.h"
#include "rank_harness.h"
#include "rina/rina.h"

namespace rina::testing {

inline bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

inline int64_t msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               t0)
      .count();
}

// Allreduces of count int32 and count float32 member values for each count,
// on comm whose rank r has identity ids[r], each against the members'
// serial sum. No gtest assertion inside: forked ranks use it too.
inline ::testing::AssertionResult exactMemberAllReduces(rinaComm_t comm,
                                                        const std::vector<int>& ids,
                                                        const std::vector<size_t>& counts) {
  int rank = -1, n = 0;
  if (rinaCommUserRank(comm, &rank) != rinaSuccess || rinaCommCount(comm, &n) != rinaSuccess) {
    return ::testing::AssertionFailure() << "no rank or size: " << rinaCommGetLastError(comm);
  }
  if (n != static_cast<int>(ids.size())) {
    return ::testing::AssertionFailure()
           << "rank " << rank << ": " << n << " ranks, expected " << ids.size();
  }
  // One type's allreduce of values, checked by firstWrong.
  auto exact = [&](auto values, rinaDataType_t type, const char* name, auto firstWrong,
                   size_t count) -> ::testing::AssertionResult {
    if (rinaAllReduce(values.data(), values.data(), count, type, rinaSum, comm) != rinaSuccess) {
      return ::testing::AssertionFailure() << "rank " << rank << ": " << name << " x " << count
                                           << ": " << rinaCommGetLastError(comm);
    }
    if (long bad = firstWrong(values, ids); bad >= 0) {
      return ::testing::AssertionFailure() << "rank " << rank << ": " << name << " x " << count
                                           << ": element " << bad << " wrong";
    }
    return ::testing::AssertionSuccess();
  };
  for (size_t count : counts) {
    if (auto r = exact(memberInts(ids[rank], count), rinaInt32, "int32", firstWrongInt, count);
        !r) {
      return r;
    }
    if (auto r =
            exact(memberFloats(ids[rank], count), rinaFloat32, "float32", firstWrongFloat, count);
        !r) {
      return r;
    }
  }
  return ::testing::AssertionSuccess();
}

// n thread ranks; the last takes no part but stays, its communicator
// alive, until fn returned on every other rank, and those wait for each
// other too (none closes its connections while another is still in fn).
inline void runWithTheLastRankOut(int n, const std::function<void(int, rinaComm_t)>& fn) {
  std::latch done(n - 1);
  runThreads(n, [&](int rank, rinaComm_t comm) {
    if (rank == n - 1) {
      done.wait();
      return;
    }
    fn(rank, comm);
    done.arrive_and_wait();
  });
}

}  // namespace rina::testing

#endif  // RINA_TESTS_SUPPORT_ELASTIC_CHECKS_H_
