#include "p4/cases.h"

#include <climits>

#include "wire/ctrl_protocol.h"

namespace rina::p4test {
namespace {

constexpr int kHosts = 4;
constexpr uint32_t kHostBase = 0x0A090001;  // 10.9.0.1 ...
constexpr uint32_t kOutsider = 0x0A090063;  // 10.9.0.99: registered for no job

Host host(int i, uint16_t port) {
  Host h;
  h.mac = {0x02, 0, 0, 0, 0x01, static_cast<uint8_t>(1 + i)};
  h.ep = {kHostBase + static_cast<uint32_t>(i), port};
  return h;
}

Host outsider(uint16_t port) { return {{0x02, 0, 0, 0, 0x01, 0x63}, {kOutsider, port}}; }

std::string tag(const TestJob& j, const std::string& what) {
  return "job " + std::to_string(j.id) + ": " + what;
}

// Every worker of a fan-in-k job contributes to (slot, shadow, seq).
Status complete(Differential& d, const TestJob& j, uint32_t slot, bool shadow, uint32_t seq,
                int32_t base) {
  for (int w = 0; w < j.fanIn; ++w) {
    RINA_TRY(sendFrom(d, j, w, contribution(j, w, slot, shadow, seq, ramp(base + 1000 * w)),
                      "slot " + std::to_string(slot) + " seq " + std::to_string(seq)));
  }
  return {};
}

// ------------------------------------------------------------------ phases

Status contributions(Differential& d, const CaseOptions&) {
  std::vector<TestJob> jobs = {makeJob(11, 2), makeJob(12, 3), makeJob(13, 4), makeJob(14, 1)};
  for (TestJob& j : jobs) RINA_TRY(registerJob(d, j, 4));
  for (uint32_t seq = 1; seq <= 4; ++seq) {
    for (const TestJob& j : jobs) {
      const uint32_t slot = (seq - 1) % 4;
      RINA_TRY(complete(d, j, slot, ((seq - 1) / 4) % 2 == 1, seq, static_cast<int32_t>(seq)));
    }
  }
  // The shadow set of a slot holds a later seq while the first keeps its own.
  TestJob& j = jobs[1];
  RINA_TRY(complete(d, j, 0, true, 5, -7));
  // Workers in reverse order, values of every sign.
  for (int w = j.fanIn - 1; w >= 0; --w) {
    RINA_TRY(sendFrom(d, j, w, contribution(j, w, 1, true, 6, ramp(-100 * w, 37)), "reversed"));
  }
  for (const TestJob& job : jobs) RINA_TRY(releaseJob(d, job));
  return {};
}

Status duplicates(Differential& d, const CaseOptions&) {
  TestJob j = makeJob(21, 3);
  RINA_TRY(registerJob(d, j, 4));
  RINA_TRY(sendFrom(d, j, 0, contribution(j, 0, 0, false, 1, ramp(1)), "w0"));
  RINA_TRY(sendFrom(d, j, 0, contribution(j, 0, 0, false, 1, ramp(1)), "w0 again: pending"));
  RINA_TRY(sendFrom(d, j, 1, contribution(j, 1, 0, false, 1, ramp(2)), "w1"));
  RINA_TRY(sendFrom(d, j, 1, contribution(j, 1, 0, false, 1, ramp(99), ina::kFlagResend),
                    "w1 resend while pending"));
  RINA_TRY(sendFrom(d, j, 2, contribution(j, 2, 0, false, 1, ramp(3)), "w2 completes"));
  RINA_TRY(sendFrom(d, j, 0, contribution(j, 0, 0, false, 1, ramp(1), ina::kFlagResend),
                    "w0 resend after completion"));
  RINA_TRY(sendFrom(d, j, 2, contribution(j, 2, 0, false, 1, ramp(3)), "w2 duplicate"));
  // A header-only marker whose answer would be the whole sum: nothing (the
  // old P4 programs padded it first and sent back 322 bytes for 66).
  RINA_TRY(sendFrom(d, j, 1, marker(j, 1, 0, false, 1), "marker duplicate, plain slice"));

  // TO_PORT: the port's duplicate marker, full-size marker and the others'.
  TestJob t = makeJob(22, 2);
  RINA_TRY(registerJob(d, t, 4));
  RINA_TRY(sendFrom(d, t, 0, marker(t, 0, 1, false, 7, 3), "port marker"));
  RINA_TRY(sendFrom(d, t, 1, contribution(t, 1, 1, false, 7, ramp(50), 0, 2), "w1 completes"));
  RINA_TRY(sendFrom(d, t, 0, marker(t, 0, 1, false, 7, 3), "port marker again: short"));
  RINA_TRY(sendFrom(
      d, t, 0, contribution(t, 0, 1, false, 7, filled(0), ina::kFlagToPort | ina::kFlagResend, 3),
      "port marker at full size: the sum"));
  RINA_TRY(sendFrom(d, t, 1, contribution(t, 1, 1, false, 7, ramp(50)),
                    "w1 duplicate: acknowledgement"));
  RINA_TRY(sendFrom(d, t, 1, marker(t, 1, 1, false, 7),
                    "w1 marker duplicate: acknowledgement (no larger than it)"));
  RINA_TRY(releaseJob(d, j));
  return releaseJob(d, t);
}

Status staleSets(Differential& d, const CaseOptions&) {
  TestJob j = makeJob(31, 2);
  RINA_TRY(registerJob(d, j, 4));
  RINA_TRY(sendFrom(d, j, 0, contribution(j, 0, 0, false, 10, ramp(10)), "seq 10"));
  RINA_TRY(sendFrom(d, j, 1, contribution(j, 1, 0, false, 5, ramp(5)), "seq 5: stale"));
  RINA_TRY(sendFrom(d, j, 1, contribution(j, 1, 0, false, 12, ramp(12)), "seq 12: resets"));
  RINA_TRY(sendFrom(d, j, 0, contribution(j, 0, 0, false, 10, ramp(10)), "seq 10: now stale"));
  RINA_TRY(sendFrom(d, j, 0, contribution(j, 0, 0, false, 12, ramp(13)), "seq 12 completes"));
  RINA_TRY(sendFrom(d, j, 1, contribution(j, 1, 0, true, 11, ramp(11)), "shadow set, seq 11"));
  RINA_TRY(sendFrom(d, j, 0, contribution(j, 0, 0, true, 11, ramp(11)), "shadow completes"));
  RINA_TRY(sendFrom(d, j, 0, contribution(j, 0, 0, false, 12, ramp(13)), "set 0 still resends"));
  // seq wraps: 0xfffffff0 then 5 is newer; a distance of 2^31 is older.
  RINA_TRY(sendFrom(d, j, 0, contribution(j, 0, 1, false, 0xfffffff0u, ramp(1)), "seq near 2^32"));
  RINA_TRY(sendFrom(d, j, 1, contribution(j, 1, 1, false, 5, ramp(2)), "seq 5 after the wrap"));
  RINA_TRY(sendFrom(d, j, 0, contribution(j, 0, 1, false, 5, ramp(3)), "completes"));
  RINA_TRY(
      sendFrom(d, j, 1, contribution(j, 1, 1, false, 0x80000005u, ramp(4)), "2^31 later: stale"));
  RINA_TRY(sendFrom(d, j, 0, contribution(j, 0, 2, false, 0, ramp(7)), "seq 0 on an unused set"));
  RINA_TRY(sendFrom(d, j, 1, contribution(j, 1, 2, false, 0, ramp(8)), "seq 0 completes"));
  return releaseJob(d, j);
}

Status markers(Differential& d, const CaseOptions&) {
  TestJob j = makeJob(41, 3);
  RINA_TRY(registerJob(d, j, 4));
  RINA_TRY(sendFrom(d, j, 1, marker(j, 1, 0, false, 1, -4), "port marker first"));
  RINA_TRY(sendFrom(d, j, 0, contribution(j, 0, 0, false, 1, ramp(5), 0, -9), "w0"));
  RINA_TRY(sendFrom(d, j, 2, contribution(j, 2, 0, false, 1, ramp(6), 0, -2), "w2 completes"));
  RINA_TRY(sendFrom(d, j, 0, contribution(j, 0, 1, false, 1, ramp(5)), "w0"));
  RINA_TRY(sendFrom(d, j, 2, contribution(j, 2, 1, false, 1, ramp(6)), "w2"));
  RINA_TRY(sendFrom(d, j, 1, marker(j, 1, 1, false, 1, 1), "port marker completes"));
  // Two contributors say TO_PORT: the later one is the port.
  RINA_TRY(sendFrom(d, j, 0, contribution(j, 0, 2, false, 1, ramp(5), ina::kFlagToPort),
                    "w0 full, TO_PORT"));
  RINA_TRY(sendFrom(d, j, 2, marker(j, 2, 2, false, 1), "w2 marker"));
  RINA_TRY(sendFrom(d, j, 1, contribution(j, 1, 2, false, 1, ramp(7)), "w1 completes"));
  RINA_TRY(sendFrom(d, j, 0, contribution(j, 0, 2, false, 1, ramp(5)), "w0 duplicate: ack"));
  // Every contributor a marker: the sum of zeros.
  for (int w = 0; w < 3; ++w) {
    RINA_TRY(sendFrom(d, j, w, marker(j, w, 3, true, 2, static_cast<int8_t>(w)), "all markers"));
  }
  return releaseJob(d, j);
}

Status broadcasts(Differential& d, const CaseOptions&) {
  TestJob j = makeJob(51, 3);
  RINA_TRY(registerJob(d, j, 4));
  RINA_TRY(sendFrom(d, j, 0, bcast(j, 0, 0, false, 1, ramp(42)), "bcast"));
  // The old P4 programs sent the slice to every member again here.
  RINA_TRY(sendFrom(d, j, 0, bcast(j, 0, 0, false, 1, ramp(42)), "bcast resend: root ack"));
  RINA_TRY(sendFrom(d, j, 1, bcast(j, 1, 0, false, 1, ramp(43)), "another root, same seq"));
  RINA_TRY(sendFrom(d, j, 0, contribution(j, 0, 0, false, 1, ramp(1)), "DATA from the root"));
  RINA_TRY(sendFrom(d, j, 1, contribution(j, 1, 0, false, 1, ramp(1)), "DATA from w1: adds"));
  RINA_TRY(sendFrom(d, j, 2, contribution(j, 2, 0, false, 1, ramp(2)), "DATA from w2"));
  RINA_TRY(sendFrom(d, j, 2, bcast(j, 2, 0, false, 2, ramp(44)), "bcast, newer seq"));
  RINA_TRY(sendFrom(d, j, 1, bcast(j, 1, 0, false, 1, ramp(45)), "bcast, older seq: stale"));
  RINA_TRY(sendFrom(d, j, 0, contribution(j, 0, 1, false, 5, ramp(5)), "DATA begins seq 5"));
  RINA_TRY(sendFrom(d, j, 1, bcast(j, 1, 1, false, 5, ramp(46)), "bcast replaces it"));
  RINA_TRY(sendFrom(d, j, 2, contribution(j, 2, 1, false, 5, ramp(5)), "DATA w2 after it"));
  RINA_TRY(sendFrom(d, j, 1, bcast(j, 1, 1, true, 9, ramp(47)), "bcast, shadow set"));
  return releaseJob(d, j);
}

Status overflow(Differential& d, const CaseOptions&) {
  TestJob j = makeJob(61, 3);
  RINA_TRY(registerJob(d, j, 4));
  std::vector<int32_t> big = filled(INT32_MAX - 10), small = filled(INT32_MIN + 10);
  big[5] = 7;
  small[9] = -7;
  RINA_TRY(sendFrom(d, j, 0, contribution(j, 0, 0, false, 1, big), "near max"));
  RINA_TRY(sendFrom(d, j, 1, contribution(j, 1, 0, false, 1, filled(6)), "to max - 4"));
  RINA_TRY(sendFrom(d, j, 2, contribution(j, 2, 0, false, 1, filled(6)), "saturates"));
  RINA_TRY(sendFrom(d, j, 1, contribution(j, 1, 0, false, 1, filled(6)), "resend: OVERFLOW"));
  RINA_TRY(sendFrom(d, j, 0, contribution(j, 0, 1, false, 1, small), "near min"));
  RINA_TRY(sendFrom(d, j, 1, contribution(j, 1, 1, false, 1, filled(-20)), "saturates low"));
  RINA_TRY(sendFrom(d, j, 2, contribution(j, 2, 1, false, 1, filled(5)), "completes"));
  // Exactly INT32_MAX and INT32_MIN without saturating: no flag.
  RINA_TRY(sendFrom(d, j, 0, contribution(j, 0, 2, false, 1, filled(INT32_MAX - 2)), "max - 2"));
  RINA_TRY(sendFrom(d, j, 1, contribution(j, 1, 2, false, 1, filled(1)), "+1"));
  RINA_TRY(sendFrom(d, j, 2, contribution(j, 2, 2, false, 1, filled(1)), "= max"));
  RINA_TRY(sendFrom(d, j, 0, contribution(j, 0, 3, false, 1, filled(INT32_MIN + 1)), "min + 1"));
  RINA_TRY(sendFrom(d, j, 1, contribution(j, 1, 3, false, 1, filled(-1)), "= min"));
  RINA_TRY(sendFrom(d, j, 2, contribution(j, 2, 3, false, 1, filled(0)), "completes"));
  return releaseJob(d, j);
}

Status exponents(Differential& d, const CaseOptions&) {
  TestJob j = makeJob(71, 4);
  RINA_TRY(registerJob(d, j, 4));
  const int8_t sets[][4] = {
      {-128, 5, -3, 127}, {-128, -128, -128, -128}, {-5, -3, -9, -4}, {0, -1, 1, -128}};
  for (uint32_t s = 0; s < 4; ++s) {
    for (int w = 0; w < 4; ++w) {
      RINA_TRY(sendFrom(d, j, w, contribution(j, w, s, false, 3, ramp(w), 0, sets[s][w]),
                        "exponent " + std::to_string(sets[s][w])));
    }
  }
  return releaseJob(d, j);
}

Status preemption(Differential& d, const CaseOptions&) {
  TestJob low = makeJob(81, 2, 1), high = makeJob(82, 2, 5), idleTaker = makeJob(83, 2, 0);
  RINA_TRY(registerJob(d, low, 60));
  RINA_TRY(complete(d, low, 0, false, 1, 1));
  RINA_TRY(complete(d, low, 59, false, 1, 2));
  RINA_TRY(registerJob(d, high, 40));  // takes most of low's slots
  if (high.length != 40) {
    return errorf(rinaInternalError, "the higher priority got %u slots, not 40 by preemption",
                  high.length);
  }
  RINA_TRY(sendFrom(d, low, 0, contribution(low, 0, 0, false, 2, ramp(1)), "lost slot: NACK"));
  RINA_TRY(sendFrom(d, low, 1, contribution(low, 1, 59, false, 2, ramp(1)), "slot 59"));
  RINA_TRY(complete(d, high, 0, false, 1, 3));
  RINA_TRY(complete(d, high, 39, true, 1, 4));
  // Both idle past the threshold: a priority-0 job takes idle slots.
  RINA_TRY(d.advanceClock(kIdleMs + 1000));
  RINA_TRY(registerJob(d, idleTaker, 30));
  if (idleTaker.length != 30) {
    return errorf(rinaInternalError, "priority 0 got %u slots, not 30 idle ones", idleTaker.length);
  }
  RINA_TRY(complete(d, idleTaker, 0, false, 1, 5));
  std::string reply;
  RINA_TRY(d.control(
      "REQUEST job=" + std::to_string(low.id) + " token=" + std::to_string(low.token) + " slots=8",
      &reply));
  ina::Grant g;
  if (ina::parseGrant(reply, &g)) {
    low.base = g.base;
    low.length = g.length;
  }
  if (low.length > 0) RINA_TRY(complete(d, low, 0, false, 3, 6));
  RINA_TRY(releaseJob(d, high));
  RINA_TRY(sendFrom(d, high, 0, contribution(high, 0, 0, false, 2, ramp(1)),
                    "after RELEASE: unknown job"));
  RINA_TRY(releaseJob(d, low));
  return releaseJob(d, idleTaker);
}

Status forgedSources(Differential& d, const CaseOptions&) {
  TestJob j = makeJob(91, 2);
  RINA_TRY(registerJob(d, j, 4));
  Datagram g = contribution(j, 0, 0, false, 1, ramp(1));
  RINA_TRY(d.send(j.members[1], g.bytes(), tag(j, "w0's datagram from w1's endpoint")));
  Host wrongPort = j.members[0];
  wrongPort.ep.port++;
  RINA_TRY(d.send(wrongPort, g.bytes(), tag(j, "w0's address, another port")));
  RINA_TRY(d.send(outsider(j.members[0].ep.port), g.bytes(), tag(j, "an outsider")));
  RINA_TRY(sendFrom(d, j, 0, g, "the real w0"));
  RINA_TRY(d.send(outsider(7), contribution(j, 1, 0, false, 1, ramp(1)).bytes(),
                  tag(j, "w1 forged: nothing added")));
  RINA_TRY(sendFrom(d, j, 1, contribution(j, 1, 0, false, 1, ramp(2)), "the real w1"));
  return releaseJob(d, j);
}

Status badTokens(Differential& d, const CaseOptions&) {
  TestJob j = makeJob(101, 2);
  RINA_TRY(registerJob(d, j, 4));
  for (uint64_t flip : {uint64_t{1} << 63, uint64_t{1}, ~uint64_t{0}}) {
    Datagram g = contribution(j, 0, 0, false, 1, ramp(1));
    g.h.token ^= flip;
    RINA_TRY(sendFrom(d, j, 0, g, "token ^ " + std::to_string(flip)));
  }
  RINA_TRY(complete(d, j, 0, false, 1, 9));
  return releaseJob(d, j);
}

Status resends(Differential& d, const CaseOptions&) {
  TestJob j = makeJob(111, 2);
  RINA_TRY(registerJob(d, j, 4));
  const uint8_t flags[] = {ina::kFlagResend, ina::kFlagLast, ina::kFlagResend | ina::kFlagLast};
  for (uint32_t slot = 0; slot < 3; ++slot) {
    const uint8_t f = flags[slot];
    for (int w = 0; w < 2; ++w) {
      RINA_TRY(sendFrom(d, j, w, contribution(j, w, slot, false, 1, ramp(f), f), "flags"));
    }
    RINA_TRY(sendFrom(d, j, 0, contribution(j, 0, slot, false, 1, ramp(f), f), "resend"));
  }
  RINA_TRY(sendFrom(d, j, 0, bcast(j, 0, 3, false, 4, ramp(4)), "bcast"));
  for (int i = 0; i < 3; ++i) {
    RINA_TRY(sendFrom(d, j, 0, bcast(j, 0, 3, false, 4, ramp(4)), "bcast resend"));
  }
  return releaseJob(d, j);
}

}  // namespace

Mac switchMac() { return {0x02, 0, 0, 0, 0, 0xfe}; }
uint32_t switchAddress() { return kHostBase + 253; }  // 10.9.0.254

bmv2::NeighborMap testHosts() {
  bmv2::NeighborMap m;
  for (int i = 0; i < kHosts; ++i) m[host(i, 0).ep.addr] = host(i, 0).mac;
  m[kOutsider] = outsider(0).mac;
  return m;
}

TestJob makeJob(uint16_t id, int fanIn, uint8_t priority) {
  TestJob j;
  j.id = id;
  j.token = 0x9e3779b97f4a7c15ull * id;
  j.fanIn = static_cast<uint8_t>(fanIn);
  j.priority = priority;
  for (int w = 0; w < fanIn; ++w) {
    j.members.push_back(host(w % kHosts, static_cast<uint16_t>(20000 + 8 * id + w)));
  }
  return j;
}

Status registerJob(Differential& d, TestJob& j, uint32_t slots) {
  std::string line = "REGISTER job=" + std::to_string(j.id) + " token=" + std::to_string(j.token) +
                     " fanin=" + std::to_string(j.fanIn) +
                     " priority=" + std::to_string(j.priority) + " slots=" + std::to_string(slots) +
                     " members=";
  for (size_t w = 0; w < j.members.size(); ++w) {
    if (w) line += ',';
    line += j.members[w].ep.toString();
  }
  std::string reply;
  RINA_TRY(d.control(line, &reply));
  ina::Grant g;
  if (!ina::parseGrant(reply, &g)) {
    return errorf(rinaInternalError, "job %u: no grant in '%s'", j.id, reply.c_str());
  }
  j.base = g.base;
  j.length = g.length;
  return {};
}

Status releaseJob(Differential& d, const TestJob& j) {
  return d.control("RELEASE job=" + std::to_string(j.id) + " token=" + std::to_string(j.token));
}

std::vector<uint8_t> Datagram::bytes() const {
  std::vector<uint8_t> out(ina::kHeaderBytes + 4 * values.size());
  ina::Header hh = h;
  hh.elems = static_cast<uint16_t>(values.size());
  ina::encodeHeader(hh, out);
  ina::encodePayload(values.data(), values.size(), out.data() + ina::kHeaderBytes);
  return out;
}

Datagram contribution(const TestJob& j, int worker, uint32_t slot, bool shadow, uint32_t seq,
                      const std::vector<int32_t>& values, uint8_t flags, int8_t exponent) {
  Datagram g;
  g.h.type = ina::Type::kData;
  g.h.flags = flags;
  g.h.job = j.id;
  g.h.slot = static_cast<uint16_t>(j.base + slot);
  g.h.shadow = shadow;
  g.h.worker = static_cast<uint8_t>(worker);
  g.h.fanIn = j.fanIn;
  g.h.seq = seq;
  g.h.exponent = exponent;
  g.h.token = j.token;
  g.values = values;
  return g;
}

Datagram marker(const TestJob& j, int worker, uint32_t slot, bool shadow, uint32_t seq,
                int8_t exponent) {
  return contribution(j, worker, slot, shadow, seq, {}, ina::kFlagToPort, exponent);
}

Datagram bcast(const TestJob& j, int worker, uint32_t slot, bool shadow, uint32_t seq,
               const std::vector<int32_t>& values) {
  Datagram g = contribution(j, worker, slot, shadow, seq, values);
  g.h.type = ina::Type::kBcast;
  return g;
}

std::vector<int32_t> ramp(int32_t base, int32_t step) {
  std::vector<int32_t> v(bmv2::kProgramPayloadElems);
  for (size_t i = 0; i < v.size(); ++i) {
    int32_t x = base + step * static_cast<int32_t>(i);
    v[i] = i % 3 == 2 ? -x : x;
  }
  return v;
}

std::vector<int32_t> filled(int32_t value) {
  return std::vector<int32_t>(bmv2::kProgramPayloadElems, value);
}

Status sendFrom(Differential& d, const TestJob& j, int worker, const Datagram& g,
                const std::string& what) {
  std::string who = "w";
  who += std::to_string(worker);
  who += ' ';
  who += what;
  return d.send(j.members[worker], g.bytes(), tag(j, who));
}

const std::vector<Phase>& phases() {
  static const std::vector<Phase> all = {{"contributions", contributions},
                                         {"duplicates", duplicates},
                                         {"stale-sets", staleSets},
                                         {"markers", markers},
                                         {"broadcasts", broadcasts},
                                         {"overflow", overflow},
                                         {"exponents", exponents},
                                         {"preemption", preemption},
                                         {"forged-sources", forgedSources},
                                         {"bad-tokens", badTokens},
                                         {"resends", resends},
                                         {"malformed", malformedPhase},
                                         {"random", randomPhase}};
  return all;
}

}  // namespace rina::p4test
