// What rina-pipeline-bench and rina-socket-ceiling share: the CPU time of
// the calling thread, and reading their flags with the switch's own parser
// (p4_agent/switchd/flag_parser.h), so a bad flag is named, not ignored.
#ifndef RINA_PERF_SWITCHD_BENCH_COMMON_H_
#define RINA_PERF_SWITCHD_BENCH_COMMON_H_

#include <sys/resource.h>

#include <cstdio>
#include <string>

#include "switchd/flag_parser.h"

namespace rina::switchd {

// User plus system CPU seconds of the calling thread.
inline double threadCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

// Parses argv with p; on an error or --help prints the error (if any) and
// usage to stderr and returns false.
inline bool parseBenchFlags(const FlagParser& p, int argc, char** argv, const char* usage) {
  std::string error;
  const FlagParser::Outcome outcome = p.parse(argc, argv, &error);
  if (outcome == FlagParser::Outcome::kParsed) return true;
  if (!error.empty()) std::fprintf(stderr, "%s\n", error.c_str());
  std::fprintf(stderr, "%s\n", usage);
  return false;
}

}  // namespace rina::switchd

#endif  // RINA_PERF_SWITCHD_BENCH_COMMON_H_
