#include "perf/options.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <limits>

#include "perf/dtype.h"

namespace rina::perf {
namespace {

bool parseInt(std::string_view text, int low, int high, int* value) {
  const std::string copy(text);
  if (copy.empty()) {
    return false;
  }
  char* end = nullptr;
  errno = 0;
  const long parsed = std::strtol(copy.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || parsed < low || parsed > high) {
    return false;
  }
  *value = static_cast<int>(parsed);
  return true;
}

std::vector<std::string> splitList(std::string_view text) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    items.emplace_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return items;
}

// "all", or a comma-separated list of names parse() knows, none twice.
template <typename T>
bool parseNameList(std::string_view text, int count, bool (*parse)(std::string_view, T*),
                   std::vector<T>* out) {
  std::vector<T> items;
  if (text == "all") {
    for (int i = 0; i < count; ++i) items.push_back(static_cast<T>(i));
  } else {
    for (const std::string& name : splitList(text)) {
      T item;
      if (!parse(name, &item) || std::find(items.begin(), items.end(), item) != items.end()) {
        return false;
      }
      items.push_back(item);
    }
  }
  *out = std::move(items);
  return true;
}

}  // namespace

bool parseSize(std::string_view text, size_t* bytes) {
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') {
    ++digits;
  }
  if (digits == 0 || text.size() > digits + 1) {
    return false;
  }
  unsigned shift = 0;
  if (text.size() == digits + 1) {
    switch (text.back()) {
      case 'k':
      case 'K':
        shift = 10;
        break;
      case 'm':
      case 'M':
        shift = 20;
        break;
      case 'g':
      case 'G':
        shift = 30;
        break;
      default:
        return false;
    }
  }
  size_t value = 0;
  for (size_t i = 0; i < digits; ++i) {
    const size_t digit = static_cast<size_t>(text[i] - '0');
    if (value > (std::numeric_limits<size_t>::max() - digit) / 10) {
      return false;
    }
    value = value * 10 + digit;
  }
  if (value > (std::numeric_limits<size_t>::max() >> shift)) {
    return false;
  }
  *bytes = value << shift;
  return true;
}

bool parseOptions(int argc, const char* const* argv, Options* options, std::string* error) {
  Options parsed = *options;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "-h" || flag == "--help") {
      parsed.help = true;
      continue;
    }
    if (i + 1 >= argc) {
      *error = "unknown flag or missing value: " + std::string(flag);
      return false;
    }
    const std::string_view value = argv[++i];
    const std::string what = std::string(flag) + " " + std::string(value);
    bool ok = true;
    int flagInt = 0;
    if (flag == "-b") {
      ok = parseSize(value, &parsed.minBytes);
    } else if (flag == "-e") {
      ok = parseSize(value, &parsed.maxBytes);
    } else if (flag == "-f") {
      ok = parseInt(value, 1, 1 << 20, &flagInt);
      parsed.factor = static_cast<size_t>(flagInt);
    } else if (flag == "-n") {
      ok = parseInt(value, 0, 1 << 30, &parsed.iters);
    } else if (flag == "-w") {
      ok = parseInt(value, 0, 1 << 30, &parsed.warmupIters);
    } else if (flag == "-c") {
      ok = parseInt(value, 0, 2, &flagInt);
      parsed.check = flagInt >= 1;
      parsed.checkEvery = flagInt == 2;
    } else if (flag == "-i") {
      ok = parseInt(value, 0, 1, &flagInt);
      parsed.inPlace = flagInt == 1;
    } else if (flag == "-d") {
      ok = parseNameList(value, rinaNumTypes, parseType, &parsed.types);
    } else if (flag == "-o") {
      ok = parseNameList(value, rinaNumOps, parseOp, &parsed.ops);
    } else if (flag == "-a") {
      parsed.algorithms = splitList(value);
      ok = std::none_of(parsed.algorithms.begin(), parsed.algorithms.end(),
                        [](const std::string& name) { return name.empty(); });
      for (size_t a = 0; ok && a < parsed.algorithms.size(); ++a) {
        ok = std::count(parsed.algorithms.begin(), parsed.algorithms.end(), parsed.algorithms[a]) ==
             1;
      }
    } else if (flag == "--local-ranks") {
      ok = parseInt(value, 1, 1024, &parsed.localRanks);
    } else if (flag == "--timeout") {
      ok = parseInt(value, 1, 1 << 30, &parsed.timeoutSeconds);
    } else if (flag == "-J") {
      parsed.jsonPath = value;
    } else if (flag == "--timeline") {
      parsed.timelinePath = value;
      ok = !value.empty();
    } else {
      *error = "unknown flag: " + std::string(flag);
      return false;
    }
    if (!ok) {
      *error = "bad value: " + what;
      return false;
    }
  }
  if (parsed.iters == 0 && !parsed.check) {
    *error = "-n 0 (no timed calls) needs the check (-c 1 or 2)";
    return false;
  }
  if (parsed.minBytes > parsed.maxBytes) {
    *error = "-b must not exceed -e";
    return false;
  }
  if (parsed.factor < 2 && parsed.minBytes != parsed.maxBytes) {
    *error = "-f must be at least 2 when -b and -e differ";
    return false;
  }
  parsed.type = parsed.types.front();
  parsed.op = parsed.ops.front();
  *options = std::move(parsed);
  return true;
}

std::string usageText(std::string_view program) {
  std::string text = "usage: " + std::string(program) + " [flags]\n";
  text += R"(Times rinaAllReduce (and, under mpirun, MPI's own allreduce) nccl-tests style.
  -b SIZE         smallest message in bytes, K/M/G suffixes (default 32M); 0:
                  the empty message, then sizes from 1 byte (a size that holds
                  as many elements as the one before is left out)
  -e SIZE         largest message in bytes (default 32M)
  -f FACTOR       multiply the size by this each step (default 2)
  -n ITERS        timed iterations per size and algorithm (default 20); 0: only
                  the check runs (times show as 0)
  -w ITERS        warmup iterations per size and algorithm (default 5); before
                  the first size each algorithm also runs max(ITERS, 20) once,
                  past start-up transients (none with -w 0)
  -c 0|1|2        check results against closed-form values (default 1: one
                  checked call per size and algorithm, out of place and in
                  place; 2: also every timed and warm-up call, out of place)
  -i 0|1          time in place (default 0: out of place; the check does both)
  -d TYPES        int8 uint8 int32 uint32 int64 uint64 float16 bfloat16 float32
                  float64, comma-separated, or all (default float32)
  -o OPS          sum prod min max avg, comma-separated, or all (default sum);
                  every type runs with every op, in one communicator
  -a ALGOS        comma-separated; each is given to rinaCommSetAlgorithm
                  (auto, ring, rd, hier, rina, ps-ina; racks from RINA_TOPO_FILE,
                  else RINA_RACKS), except "mpi": MPI's own allreduce (PMPI),
                  under mpirun only. Several run interleaved on the same
                  buffers. (default auto)
  --local-ranks N fork N ranks on this host instead of using MPI
  --timeout SECS  with --local-ranks: kill every rank after this (default 600)
  -J FILE         also write the results as JSON
  --timeline FILE rank 0 writes one line per timed iteration as it ends:
                  algorithm, bytes, start (Unix time, s) and duration (us) on
                  rank 0, for throughput over time (e.g. across a mid-run rate
                  change) and progress while the run goes
  -h, --help      this text
Ranks: under mpirun (built with MPI) one per MPI process, bootstrapped with
rinaMpiCommInit; with --local-ranks N, N forked processes; otherwise 1.
Exit status: 0 ok, 1 wrong results, 2 error, 3 timeout.
)";
  return text;
}

std::vector<size_t> sizeSequence(const Options& options) {
  std::vector<size_t> sizes;
  for (size_t bytes = options.minBytes; bytes <= options.maxBytes;) {
    sizes.push_back(bytes);
    if (bytes == 0) {
      bytes = 1;
      continue;
    }
    if (options.factor < 2 || bytes > options.maxBytes / options.factor) {
      break;
    }
    bytes *= options.factor;
  }
  return sizes;
}

bool wantsMpi(const Options& options) {
  return std::find(options.algorithms.begin(), options.algorithms.end(), kMpiAlgorithm) !=
         options.algorithms.end();
}

bool wantsRina(const Options& options) {
  return std::any_of(options.algorithms.begin(), options.algorithms.end(),
                     [](const std::string& name) { return name != kMpiAlgorithm; });
}

}  // namespace rina::perf
