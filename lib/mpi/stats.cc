#include "mpi/stats.h"

#include <cstdio>

#include "mpi/call_filter.h"

namespace rina::mpi {

void printReports(const std::vector<CommReport>& reports) {
  if (reports.empty()) {
    std::fprintf(stderr, "rina-mpi stats: no collective reached the interposer\n");
    return;
  }
  for (const CommReport& r : reports) {
    std::string why;
    for (int reason = 0; reason < rinaMpiNumReasons; ++reason) {
      if (r.stats.delegatedBy[reason] == 0) continue;
      why += (why.empty() ? "" : ", ") + std::string(rinaMpiDelegateReasonName(reason)) + " " +
             std::to_string(r.stats.delegatedBy[reason]);
    }
    std::fprintf(stderr,
                 "rina-mpi stats: %s size %d: handled %llu calls %llu bytes %.4f s; delegated "
                 "%llu calls %llu bytes %.4f s (%s)\n",
                 r.name.c_str(), r.size, static_cast<unsigned long long>(r.stats.handledCalls),
                 static_cast<unsigned long long>(r.stats.handledBytes), r.stats.handledSeconds,
                 static_cast<unsigned long long>(r.stats.delegatedCalls),
                 static_cast<unsigned long long>(r.stats.delegatedBytes), r.stats.delegatedSeconds,
                 why.empty() ? "none" : why.c_str());
  }
  std::fflush(stderr);
}

CallTimer::CallTimer() : enabled_(statsEnabled()) {
  if (enabled_) start_ = std::chrono::steady_clock::now();
}

double CallTimer::seconds() const {
  if (!enabled_) return 0;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void countHandled(rinaMpiCommStats& stats, uint64_t bytes, const CallTimer& timer) {
  stats.handledCalls += 1;
  stats.handledBytes += bytes;
  stats.handledSeconds += timer.seconds();
}

void countDelegated(rinaMpiCommStats& stats, rinaMpiDelegateReason_t reason, uint64_t bytes,
                    const CallTimer& timer) {
  stats.delegatedCalls += 1;
  stats.delegatedBytes += bytes;
  stats.delegatedSeconds += timer.seconds();
  if (reason >= 0 && reason < rinaMpiNumReasons) stats.delegatedBy[reason] += 1;
}

}  // namespace rina::mpi

extern "C" __attribute__((visibility("default"))) const char* rinaMpiDelegateReasonName(
    int reason) {
  static const char* const names[rinaMpiNumReasons] = {
      "disabled", "count-zero", "below-threshold", "datatype",  "op",
      "user-op",  "intercomm",  "single-rank",     "arguments", "rina-unavailable"};
  if (reason < 0 || reason >= rinaMpiNumReasons) return "?";
  return names[reason];
}
