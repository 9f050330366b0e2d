// What rina-allreduce-perf prints: bandwidths, the table (nccl-tests columns)
// and the JSON file. Pure functions of the measured numbers.
#ifndef RINA_TOOLS_PERF_REPORT_H_
#define RINA_TOOLS_PERF_REPORT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "rina/rina.h"

namespace rina::perf {

// One line of the table: one message size, one algorithm.
struct Row {
  size_t bytes = 0;
  size_t count = 0;
  rinaDataType_t type = rinaFloat32;
  rinaRedOp_t op = rinaSum;
  std::string algorithm;
  double timeUs = 0;   // mean per iteration; the slowest rank's
  int64_t wrong = -1;  // elements that differ from the expected; -1: not checked
};

// bytes / time, in GB/s (10^9 bytes per second).
double algBandwidth(size_t bytes, double timeUs);
// The share of the link a ring allreduce needs: algbw * 2 (n - 1) / n.
double busBandwidth(double algBandwidthGBps, int nranks);

// "#" + the column names, aligned with formatRow's fields:
// size count type redop algo time(us) algbw(GB/s) busbw(GB/s) #wrong
std::string formatColumnHeader();
std::string formatRow(const Row& row, int nranks);  // no trailing newline

// Totals over rows.
struct Summary {
  int64_t wrong = 0;           // sum of the checked rows' wrong counts
  double avgBusBandwidth = 0;  // mean busbw over rows
};
Summary summarize(const std::vector<Row>& rows, int nranks);
// "# Out of bounds values : N OK|FAILED" and "# Avg bus bandwidth    : X".
std::string formatFooter(const Summary& summary);

// Everything a JSON reader needs to redo the table.
struct RunInfo {
  std::string tool;  // "rina-allreduce-perf"
  int nranks = 1;
  std::vector<std::string> hosts;  // distinct
  std::string bootstrap;           // "mpi", "local-ranks", "single"
  std::vector<std::string> algorithms;
  int iters = 0;
  int warmupIters = 0;
  bool inPlace = false;
  bool check = true;
};
std::string toJson(const RunInfo& info, const std::vector<Row>& rows);

}  // namespace rina::perf

#endif  // RINA_TOOLS_PERF_REPORT_H_
