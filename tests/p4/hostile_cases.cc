// The differential test's hostile phases: every decode error, datagrams the
// switch must refuse, frames that are not INA datagrams, and a seeded random
// mix of contributions, markers, broadcasts, resends, stale and foreign
// slots, forged sources, bad tokens and corrupted headers.
#include <climits>

#include "p4/cases.h"

namespace rina::p4test {
namespace {

void put16(std::vector<uint8_t>& b, size_t at, uint16_t v) {
  b[at] = static_cast<uint8_t>(v >> 8);
  b[at + 1] = static_cast<uint8_t>(v);
}

struct Bad {
  std::string what;
  std::vector<uint8_t> bytes;
};

}  // namespace

Status malformedPhase(Differential& d, const CaseOptions&) {
  TestJob j = makeJob(121, 2);
  RINA_TRY(registerJob(d, j, 4));
  const std::vector<uint8_t> good = contribution(j, 0, 0, false, 1, ramp(1)).bytes();
  std::vector<Bad> bad;
  auto edit = [&](const std::string& what, const std::function<void(std::vector<uint8_t>&)>& f) {
    std::vector<uint8_t> b = good;
    f(b);
    bad.push_back({what, b});
  };
  bad.push_back({"empty datagram", {}});
  bad.push_back({"10 bytes", {good.begin(), good.begin() + 10}});
  bad.push_back({"23 bytes", {good.begin(), good.begin() + 23}});
  edit("magic 4", [](auto& b) { b[0] = 0x42; });
  edit("version 1", [](auto& b) { b[0] = 0x51; });
  edit("pad 1", [](auto& b) { b[13] = 1; });
  edit("elems 2049", [](auto& b) { put16(b, 14, 2049); });
  edit("elems 65535, 2 values", [](auto& b) {
    put16(b, 14, 65535);
    b.resize(32);
  });
  edit("elems 63, 64 values", [](auto& b) { put16(b, 14, 63); });
  edit("elems 64, no payload", [](auto& b) { b.resize(24); });
  edit("elems 64, one value more", [](auto& b) { b.insert(b.end(), {0, 0, 0, 1}); });
  edit("type 0", [](auto& b) { b[1] = 0x00; });
  edit("type 6", [](auto& b) { b[1] = 0x60; });
  edit("type 15", [](auto& b) { b[1] = 0xF8; });
  edit("job 0", [](auto& b) { put16(b, 2, 0); });
  edit("fan-in 0", [](auto& b) { b[7] = 0; });
  edit("fan-in 33", [](auto& b) { b[7] = 33; });
  edit("worker = fan-in", [](auto& b) { b[6] = 2; });
  edit("DATA without payload or TO_PORT", [](auto& b) {
    put16(b, 14, 0);
    b.resize(24);
  });
  edit("BCAST without payload, TO_PORT", [](auto& b) {
    b[1] = 0x38;
    put16(b, 14, 0);
    b.resize(24);
  });
  // Decodable, and refused after decode.
  edit("RESULT to the switch", [](auto& b) { b[1] = 0x20; });
  edit("CTRL to the switch", [](auto& b) { b[1] = 0x40; });
  edit("NACK to the switch", [](auto& b) {
    b[1] = 0x50;
    put16(b, 14, 0);
    b.resize(24);
  });
  edit("RESULT acknowledgement to the switch", [](auto& b) {
    b[1] = 0x20;
    put16(b, 14, 0);
    b.resize(24);
  });
  edit("unknown job", [](auto& b) { put16(b, 2, 4000); });
  edit("32 values", [](auto& b) {
    put16(b, 14, 32);
    b.resize(24 + 128);
  });
  edit("1 value", [](auto& b) {
    put16(b, 14, 1);
    b.resize(28);
  });
  edit("fan-in 3 for a fan-in-2 job", [](auto& b) { b[7] = 3; });
  edit("slot 8192", [](auto& b) { put16(b, 4, 8192); });
  edit("slot 32767, shadow", [](auto& b) { put16(b, 4, 0xFFFF); });
  for (const Bad& b : bad) {
    RINA_TRY(d.send(j.members[0], b.bytes, "job 121: w0 " + b.what));
  }
  // Frames that are not INA datagrams for the switch.
  const Host& w0 = j.members[0];
  const ina::Endpoint sw{switchAddress(), 9100};
  Frame other = udpFrame(switchMac(), w0.mac, w0.ep, {switchAddress(), 9101}, good);
  RINA_TRY(d.sendOther(other, "UDP to another port"));
  Frame tcp = udpFrame(switchMac(), w0.mac, w0.ep, sw, good);
  tcp[23] = 6;
  RINA_TRY(d.sendOther(tcp, "TCP"));
  IpFields fragment;
  fragment.flagsFragment = 0x2000;  // more fragments
  RINA_TRY(d.sendOther(udpFrame(switchMac(), w0.mac, w0.ep, sw, good, fragment), "IP fragment"));
  Frame arp(42, 0);
  for (int i = 0; i < 6; ++i) arp[i] = 0xFF;
  arp[12] = 0x08;
  arp[13] = 0x06;
  RINA_TRY(d.sendOther(arp, "ARP"));
  Frame ipv6 = other;
  ipv6[12] = 0x86;
  ipv6[13] = 0xDD;
  RINA_TRY(d.sendOther(ipv6, "IPv6 ethertype"));
  RINA_TRY(d.sendOther(Frame(good.begin(), good.begin() + 20), "a 20-byte frame"));
  // After all of it the job still sums.
  for (int w = 0; w < 2; ++w) {
    RINA_TRY(sendFrom(d, j, w, contribution(j, w, 0, false, 1, ramp(w)), "after the noise"));
  }
  return releaseJob(d, j);
}

Status randomPhase(Differential& d, const CaseOptions& o) {
  std::mt19937 rng(o.seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
  std::vector<TestJob> jobs = {makeJob(131, 2, 3), makeJob(132, 3, 3), makeJob(133, 4, 3)};
  for (TestJob& j : jobs) RINA_TRY(registerJob(d, j, 4));
  std::vector<uint32_t> seqs(jobs.size() * 8, 1);  // per job, slot and set: the current seq
  for (int n = 0; n < o.randomDatagrams; ++n) {
    const size_t ji = static_cast<size_t>(pick(static_cast<int>(jobs.size())));
    const TestJob& j = jobs[ji];
    const int w = pick(j.fanIn);
    // Mostly the job's own slots; sometimes one past its grant (another
    // job's, or unowned).
    const uint32_t slot = static_cast<uint32_t>(pick(10) == 0 ? 4 + pick(2) : pick(4));
    const bool shadow = pick(2) == 1;
    // Mostly the set's current seq; sometimes the next (the window moves
    // on) or an older one (a late datagram).
    uint32_t& cur = seqs[ji * 8 + (slot % 4) * 2 + (shadow ? 1 : 0)];
    const int r = pick(100);
    if (r < 10) ++cur;
    const uint32_t seq = r >= 10 && r < 20 ? cur - 1 - static_cast<uint32_t>(pick(3)) : cur;
    std::vector<int32_t> values(bmv2::kProgramPayloadElems);
    for (int32_t& v : values) {
      v = pick(20) == 0 ? (pick(2) ? INT32_MAX - pick(8) : INT32_MIN + pick(8))
                        : static_cast<int32_t>(rng() % 2001) - 1000;
    }
    const int8_t exponent = static_cast<int8_t>(rng());
    Datagram g;
    const int kind = pick(100);
    if (kind < 70) {
      uint8_t flags = static_cast<uint8_t>((pick(5) == 0 ? ina::kFlagToPort : 0) |
                                           (pick(4) == 0 ? ina::kFlagResend : 0) |
                                           (pick(8) == 0 ? ina::kFlagLast : 0));
      g = contribution(j, w, slot, shadow, seq, values, flags, exponent);
    } else if (kind < 85) {
      g = marker(j, w, slot, shadow, seq, exponent);
    } else {
      g = bcast(j, w, slot, shadow, seq, values);
    }
    std::vector<uint8_t> bytes = g.bytes();
    Host from = j.members[static_cast<size_t>(w)];
    std::string what = "random " + std::to_string(n);
    const int trouble = pick(100);
    if (trouble < 3) {
      from = j.members[static_cast<size_t>((w + 1) % j.fanIn)];  // someone else's datagram
      what += " forged";
    } else if (trouble < 5) {
      bytes[16 + static_cast<size_t>(pick(8))] ^= static_cast<uint8_t>(1 + pick(255));
      what += " bad token";
    } else if (trouble < 9) {
      bytes[static_cast<size_t>(pick(16))] ^= static_cast<uint8_t>(1 << pick(8));
      what += " corrupted header";
    } else if (trouble < 10) {
      bytes.resize(static_cast<size_t>(pick(static_cast<int>(bytes.size()))));
      what += " cut";
    }
    RINA_TRY(d.send(from, bytes,
                    "job " + std::to_string(j.id) + ": w" + std::to_string(w) + " " + what));
    if (n % 500 == 499) RINA_TRY(d.check("random, up to datagram " + std::to_string(n), false));
  }
  for (const TestJob& j : jobs) RINA_TRY(releaseJob(d, j));
  return {};
}

}  // namespace rina::p4test
