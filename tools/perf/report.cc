#include "perf/report.h"

#include <cstdio>

#include "perf/dtype.h"

namespace rina::perf {
namespace {

std::string printed(const char* fmt, auto... args) {
  char line[512];
  std::snprintf(line, sizeof line, fmt, args...);
  return line;
}

std::string jsonString(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += printed("\\u%04x", static_cast<unsigned>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string jsonList(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    out += (i ? ", " : "") + jsonString(items[i]);
  }
  return out + "]";
}

}  // namespace

double algBandwidth(size_t bytes, double timeUs) {
  return timeUs > 0 ? static_cast<double>(bytes) / (timeUs * 1e3) : 0.0;
}

double busBandwidth(double algBandwidthGBps, int nranks) {
  return nranks > 0 ? algBandwidthGBps * 2.0 * (nranks - 1) / nranks : 0.0;
}

// Field widths shared by the header and the rows.
constexpr char kRowLayout[] = "%12s %12s %9s %6s %8s %11s %12s %12s %7s";

std::string formatColumnHeader() {
  // The row layout right-aligns "size" in 12 columns, so the first column is
  // blank and takes the '#' in place (no string concatenation here: gcc 12
  // at -O3 reports a false -Wrestrict inside operator+ for that).
  std::string header = printed(kRowLayout, "size", "count", "type", "redop", "algo", "time(us)",
                               "algbw(GB/s)", "busbw(GB/s)", "#wrong");
  header[0] = '#';
  return header;
}

std::string formatRow(const Row& row, int nranks) {
  const double algbw = algBandwidth(row.bytes, row.timeUs);
  const std::string wrong = row.wrong < 0 ? "N/A" : std::to_string(row.wrong);
  return printed(kRowLayout, std::to_string(row.bytes).c_str(), std::to_string(row.count).c_str(),
                 typeName(row.type), opName(row.op), row.algorithm.c_str(),
                 printed("%.2f", row.timeUs).c_str(), printed("%.3f", algbw).c_str(),
                 printed("%.3f", busBandwidth(algbw, nranks)).c_str(), wrong.c_str());
}

Summary summarize(const std::vector<Row>& rows, int nranks) {
  Summary summary;
  double busbwTotal = 0;
  for (const Row& row : rows) {
    summary.wrong += row.wrong > 0 ? row.wrong : 0;
    busbwTotal += busBandwidth(algBandwidth(row.bytes, row.timeUs), nranks);
  }
  summary.avgBusBandwidth = rows.empty() ? 0.0 : busbwTotal / static_cast<double>(rows.size());
  return summary;
}

std::string formatFooter(const Summary& summary) {
  return printed("# Out of bounds values : %lld %s\n# Avg bus bandwidth    : %.3f\n",
                 static_cast<long long>(summary.wrong), summary.wrong > 0 ? "FAILED" : "OK",
                 summary.avgBusBandwidth);
}

std::string toJson(const RunInfo& info, const std::vector<Row>& rows) {
  const Summary summary = summarize(rows, info.nranks);
  std::string out = "{\n";
  out += "  \"tool\": " + jsonString(info.tool) + ",\n";
  out += printed("  \"nranks\": %d,\n", info.nranks);
  out += "  \"hosts\": " + jsonList(info.hosts) + ",\n";
  out += "  \"bootstrap\": " + jsonString(info.bootstrap) + ",\n";
  out += "  \"algorithms\": " + jsonList(info.algorithms) + ",\n";
  out += printed("  \"iters\": %d,\n  \"warmup_iters\": %d,\n", info.iters, info.warmupIters);
  out += printed("  \"in_place\": %s,\n  \"check\": %s,\n", info.inPlace ? "true" : "false",
                 info.check ? "true" : "false");
  out += "  \"rows\": [";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& row = rows[i];
    const double algbw = algBandwidth(row.bytes, row.timeUs);
    out += i ? ",\n    " : "\n    ";
    out += printed("{\"size\": %zu, \"count\": %zu, \"type\": \"%s\", \"redop\": \"%s\", ",
                   row.bytes, row.count, typeName(row.type), opName(row.op));
    out += "\"algo\": " + jsonString(row.algorithm);
    out += printed(", \"time_us\": %.3f, \"algbw_gbps\": %.6f, \"busbw_gbps\": %.6f, ", row.timeUs,
                   algbw, busBandwidth(algbw, info.nranks));
    out += row.wrong < 0 ? std::string("\"wrong\": null}")
                         : printed("\"wrong\": %lld}", static_cast<long long>(row.wrong));
  }
  out += rows.empty() ? "],\n" : "\n  ],\n";
  out += printed("  \"out_of_bounds\": %lld,\n  \"avg_busbw_gbps\": %.6f\n}\n",
                 static_cast<long long>(summary.wrong), summary.avgBusBandwidth);
  return out;
}

}  // namespace rina::perf
