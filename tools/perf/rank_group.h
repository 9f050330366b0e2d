// How the benchmark's ranks agree on timings and error counts. This goes
// through MPI or shared memory, never through the library being measured, so
// a broken library cannot hide its own wrong results.
#ifndef RINA_TOOLS_PERF_RANK_GROUP_H_
#define RINA_TOOLS_PERF_RANK_GROUP_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace rina::perf {

class RankGroup {
 public:
  virtual ~RankGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Collective over the group; a wait that times out is fatal (see fatal()).
  virtual void barrier() = 0;
  virtual double maxOverRanks(double value) = 0;
  virtual int64_t sumOverRanks(int64_t value) = 0;
  // Each rank's host name, indexed by rank.
  virtual std::vector<std::string> hostNames() = 0;
};

// One rank: every collective is the identity.
std::unique_ptr<RankGroup> makeSingleRankGroup();

// For ranks forked from one parent: create before fork(), then every child
// calls joinAsRank(r) on its copy. Waits time out after timeoutSeconds.
class ForkedRankGroup : public RankGroup {
 public:
  static std::unique_ptr<ForkedRankGroup> create(int nranks, int timeoutSeconds);
  virtual void joinAsRank(int rank) = 0;
};

// Reports a fatal error of this rank on stderr and ends the process (under
// MPI: the whole job) with exitCode. Never returns.
[[noreturn]] void fatal(int exitCode, const std::string& message);
// What fatal() does after printing; the default flushes stdio and _exit()s.
using FatalHandler = void (*)(int exitCode);
void setFatalHandler(FatalHandler handler);
// The rank fatal() names in its message (-1: none yet).
void setFatalRank(int rank);
// The program fatal() names (default "rina-allreduce-perf").
void setFatalProgram(const char* program);

// Exit codes of the tool.
inline constexpr int kExitOk = 0;
inline constexpr int kExitWrongResults = 1;
inline constexpr int kExitError = 2;
inline constexpr int kExitTimeout = 3;

}  // namespace rina::perf

#endif  // RINA_TOOLS_PERF_RANK_GROUP_H_
