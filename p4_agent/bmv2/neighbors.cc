#include "bmv2/neighbors.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "core/socket.h"

namespace rina::bmv2 {
namespace {

bool parseAddress(std::string_view text, uint32_t* out) {
  std::string s(text);
  in_addr a{};
  if (inet_pton(AF_INET, s.c_str(), &a) != 1) return false;
  *out = ntohl(a.s_addr);
  return true;
}

std::vector<std::string_view> words(std::string_view line) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (pos < line.size()) {
    while (pos < line.size() && (line[pos] == ' ' || line[pos] == '\t')) ++pos;
    size_t end = pos;
    while (end < line.size() && line[end] != ' ' && line[end] != '\t') ++end;
    if (end > pos) out.push_back(line.substr(pos, end - pos));
    pos = end;
  }
  return out;
}

}  // namespace

std::string macString(const Mac& mac) {
  char buf[18];
  snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3], mac[4],
           mac[5]);
  return buf;
}

bool parseMac(std::string_view text, Mac* out) {
  if (text.size() != 17) return false;
  Mac m{};
  for (size_t i = 0; i < 6; ++i) {
    if (i > 0 && text[3 * i - 1] != ':') return false;
    unsigned v = 0;
    for (size_t j = 0; j < 2; ++j) {
      char c = text[3 * i + j];
      unsigned d = c >= '0' && c <= '9'   ? c - '0'
                   : c >= 'a' && c <= 'f' ? c - 'a' + 10
                   : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                          : 16;
      if (d > 15) return false;
      v = v * 16 + d;
    }
    m[i] = static_cast<uint8_t>(v);
  }
  *out = m;
  return true;
}

Status parseNeighbors(std::string_view text, const std::string& where, NeighborMap* out) {
  NeighborMap map;
  size_t pos = 0;
  int lineNo = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++lineNo;
    if (size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    std::vector<std::string_view> w = words(line);
    if (w.empty()) continue;
    uint32_t addr = 0;
    Mac mac{};
    if (w.size() != 2 || !parseAddress(w[0], &addr) || !parseMac(w[1], &mac)) {
      return errorf(rinaInvalidArgument, "%s:%d: expected 'A.B.C.D aa:bb:cc:dd:ee:ff', got '%s'",
                    where.c_str(), lineNo, std::string(line).c_str());
    }
    if (!map.emplace(addr, mac).second) {
      return errorf(rinaInvalidArgument, "%s:%d: %s is listed twice", where.c_str(), lineNo,
                    std::string(w[0]).c_str());
    }
  }
  *out = std::move(map);
  return {};
}

Status readNeighborFile(const std::string& path, NeighborMap* out) {
  std::ifstream f(path);
  if (!f) return systemErrorf(errno, "neighbor file %s", path.c_str());
  std::stringstream text;
  text << f.rdbuf();
  return parseNeighbors(text.str(), path, out);
}

NeighborMap parseKernelNeighbors(std::string_view text) {
  NeighborMap map;
  size_t pos = text.find('\n');  // the header line
  while (pos != std::string_view::npos && pos < text.size()) {
    size_t end = text.find('\n', pos + 1);
    if (end == std::string_view::npos) end = text.size();
    std::vector<std::string_view> w = words(text.substr(pos + 1, end - pos - 1));
    pos = end;
    uint32_t addr = 0;
    Mac mac{};
    if (w.size() < 4 || !parseAddress(w[0], &addr) || !parseMac(w[3], &mac)) continue;
    unsigned flags = static_cast<unsigned>(std::strtoul(std::string(w[2]).c_str(), nullptr, 16));
    if (flags & 0x2) map[addr] = mac;
  }
  return map;
}

NeighborMap kernelNeighbors() {
  std::ifstream f("/proc/net/arp");
  std::stringstream text;
  text << f.rdbuf();
  return parseKernelNeighbors(text.str());
}

bool resolveNeighbor(uint32_t addr, const NeighborMap& known, int waitMs, Mac* out) {
  if (auto it = known.find(addr); it != known.end()) {
    *out = it->second;
    return true;
  }
  auto lookup = [&] {
    NeighborMap k = kernelNeighbors();
    auto it = k.find(addr);
    if (it == k.end()) return false;
    *out = it->second;
    return true;
  };
  if (lookup()) return true;
  Fd fd(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return false;
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_addr.s_addr = htonl(addr);
  to.sin_port = htons(9);  // discard
  char nothing = 0;
  sendto(fd.get(), &nothing, 0, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&to), sizeof to);
  for (int waited = 0; waited < waitMs; waited += 20) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (lookup()) return true;
  }
  return false;
}

}  // namespace rina::bmv2
