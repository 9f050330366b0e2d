// rina-allreduce-perf's table: bandwidth formulas, the exact columns, the
// footer, the JSON.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "perf/report.h"

namespace rina::perf {
namespace {

std::vector<std::string> fields(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string field; in >> field;) {
    out.push_back(field);
  }
  return out;
}

TEST(PerfReport, Bandwidths) {
  // 1 MB in 1000 us is 1 GB/s (10^9 bytes per second).
  EXPECT_DOUBLE_EQ(algBandwidth(1000000, 1000.0), 1.0);
  EXPECT_DOUBLE_EQ(algBandwidth(64, 0.0), 0.0);
  // busbw = algbw * 2 (n - 1) / n
  EXPECT_DOUBLE_EQ(busBandwidth(1.0, 1), 0.0);
  EXPECT_DOUBLE_EQ(busBandwidth(1.0, 2), 1.0);
  EXPECT_DOUBLE_EQ(busBandwidth(1.0, 4), 1.5);
  EXPECT_DOUBLE_EQ(busBandwidth(3.0, 3), 4.0);
  EXPECT_DOUBLE_EQ(busBandwidth(2.0, 8), 3.5);
}

TEST(PerfReport, ColumnHeaderNamesTheColumns) {
  const std::string header = formatColumnHeader();
  ASSERT_EQ(header[0], '#');
  EXPECT_EQ(fields(header.substr(1)),
            (std::vector<std::string>{"size", "count", "type", "redop", "algo", "time(us)",
                                      "algbw(GB/s)", "busbw(GB/s)", "#wrong"}));
}

TEST(PerfReport, RowHasTheColumnsInOrderAlignedWithTheHeader) {
  Row row;
  row.bytes = 67108864;
  row.count = 16777216;
  row.type = rinaFloat32;
  row.op = rinaSum;
  row.algorithm = "ring";
  row.timeUs = 100000.0;
  row.wrong = 0;
  const std::string line = formatRow(row, 4);
  EXPECT_EQ(fields(line), (std::vector<std::string>{"67108864", "16777216", "float32", "sum",
                                                    "ring", "100000.00", "0.671", "1.007", "0"}));
  // Every field ends where its header name ends (after the header's "#").
  const std::string header = formatColumnHeader();
  ASSERT_EQ(line.size(), header.size());
  for (size_t i = 1; i + 1 < line.size(); ++i) {
    const bool lineEnds = line[i] != ' ' && line[i + 1] == ' ';
    const bool headerEnds = header[i] != ' ' && header[i + 1] == ' ';
    EXPECT_EQ(lineEnds, headerEnds) << "column end at " << i;
  }
}

TEST(PerfReport, UncheckedRowSaysNA) {
  Row row;
  row.bytes = 4096;
  row.count = 2048;
  row.type = rinaBfloat16;
  row.op = rinaMax;
  row.algorithm = "mpi";
  row.timeUs = 12.3456;
  row.wrong = -1;
  EXPECT_EQ(fields(formatRow(row, 2)),
            (std::vector<std::string>{"4096", "2048", "bfloat16", "max", "mpi", "12.35", "0.332",
                                      "0.332", "N/A"}));
}

TEST(PerfReport, FooterCountsWrongAndAveragesBusBandwidth) {
  std::vector<Row> rows(2);
  rows[0].bytes = 1000000;
  rows[0].timeUs = 1000.0;  // algbw 1, busbw 1.5 with 4 ranks
  rows[0].wrong = 0;
  rows[1].bytes = 2000000;
  rows[1].timeUs = 1000.0;  // algbw 2, busbw 3
  rows[1].wrong = -1;       // not checked: not counted
  Summary summary = summarize(rows, 4);
  EXPECT_EQ(summary.wrong, 0);
  EXPECT_DOUBLE_EQ(summary.avgBusBandwidth, 2.25);
  EXPECT_EQ(formatFooter(summary),
            "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 2.250\n");
  rows[1].wrong = 7;
  summary = summarize(rows, 4);
  EXPECT_EQ(summary.wrong, 7);
  EXPECT_EQ(formatFooter(summary).substr(0, 36), "# Out of bounds values : 7 FAILED\n# ");
}

TEST(PerfReport, Json) {
  Row row;
  row.bytes = 1000000;
  row.count = 250000;
  row.algorithm = "r\"d";
  row.timeUs = 1000.0;
  row.wrong = 3;
  RunInfo info{"rina-allreduce-perf", 2, {"a", "b"}, "mpi", {"ring", "mpi"}, 20, 5, false, true};
  const std::string json = toJson(info, {row});
  for (const char* part :
       {"\"nranks\": 2", "\"hosts\": [\"a\", \"b\"]", "\"algorithms\": [\"ring\", \"mpi\"]",
        "\"algo\": \"r\\\"d\"", "\"time_us\": 1000.000", "\"algbw_gbps\": 1.000000",
        "\"busbw_gbps\": 1.000000", "\"wrong\": 3}", "\"out_of_bounds\": 3"}) {
    EXPECT_NE(json.find(part), std::string::npos) << part << "\n" << json;
  }
  EXPECT_NE(toJson(info, {}).find("\"rows\": []"), std::string::npos);
}

}  // namespace
}  // namespace rina::perf
