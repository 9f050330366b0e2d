// Command line of rina-allreduce-perf (flags in the manner of nccl-tests).
#ifndef RINA_TOOLS_PERF_OPTIONS_H_
#define RINA_TOOLS_PERF_OPTIONS_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "rina/rina.h"

namespace rina::perf {

// The algorithm name that means "the MPI library's own allreduce".
inline constexpr std::string_view kMpiAlgorithm = "mpi";

struct Options {
  size_t minBytes = size_t{32} << 20;
  size_t maxBytes = size_t{32} << 20;
  size_t factor = 2;
  int iters = 20;
  int warmupIters = 5;
  bool check = true;
  bool checkEvery = false;  // -c 2: also every timed and warm-up iteration (out of place)
  bool inPlace = false;     // time in place (the check always runs both ways)
  // -d and -o: every type with every op, one table row per size of each.
  std::vector<rinaDataType_t> types = {rinaFloat32};
  std::vector<rinaRedOp_t> ops = {rinaSum};
  // The combination being run (runBenchmark sets them; parsing: the first).
  rinaDataType_t type = rinaFloat32;
  rinaRedOp_t op = rinaSum;
  std::vector<std::string> algorithms = {"auto"};
  int localRanks = 0;        // > 0: fork that many ranks on this host
  int timeoutSeconds = 600;  // --local-ranks only: kill the ranks after this
  std::string jsonPath;
  // --timeline FILE: rank 0 writes every timed iteration as it ends
  // (algorithm, bytes, wall-clock start, duration), for throughput over time.
  std::string timelinePath;
  bool help = false;
};

// "4096", "64K", "16M", "1G" (powers of 1024; k/m/g too). False on an empty,
// malformed, negative or overflowing value.
bool parseSize(std::string_view text, size_t* bytes);

// Updates *options (holding the defaults) from argv; false with *error set
// on a bad command line, and *options untouched.
bool parseOptions(int argc, const char* const* argv, Options* options, std::string* error);

std::string usageText(std::string_view program);

// minBytes, minBytes * factor, ... up to maxBytes; from 0: 0, then 1,
// factor, factor^2, ...
std::vector<size_t> sizeSequence(const Options& options);

// Whether the list names the MPI baseline / any rina algorithm.
bool wantsMpi(const Options& options);
bool wantsRina(const Options& options);

}  // namespace rina::perf

#endif  // RINA_TOOLS_PERF_OPTIONS_H_
