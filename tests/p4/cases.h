// The datagram sequences of the differential test, one phase each
// (contributions, duplicates, stale sets, preemption, forged sources, bad
// tokens, malformed headers, resends, markers, broadcasts, overflow,
// exponents, and a seeded random mix), and the helpers that build them.
#ifndef RINA_TESTS_P4_CASES_H_
#define RINA_TESTS_P4_CASES_H_

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "p4/differential.h"
#include "rina/ina_wire.h"

namespace rina::p4test {

struct CaseOptions {
  uint32_t seed = 1;
  int randomDatagrams = 1500;
};

struct Phase {
  const char* name;
  std::function<Status(Differential&, const CaseOptions&)> run;
};
const std::vector<Phase>& phases();

Mac switchMac();
uint32_t switchAddress();
bmv2::NeighborMap testHosts();  // every host a phase sends from

// A job of the test: its members are test hosts, one UDP port each.
struct TestJob {
  uint16_t id = 0;
  uint64_t token = 0;
  uint8_t fanIn = 0;
  uint8_t priority = 1;
  std::vector<Host> members;
  uint32_t base = 0, length = 0;  // the grant
};
TestJob makeJob(uint16_t id, int fanIn, uint8_t priority = 1);
Status registerJob(Differential& d, TestJob& job, uint32_t slots);
Status releaseJob(Differential& d, const TestJob& job);

// One datagram's header and payload; elems follows the payload's size.
struct Datagram {
  ina::Header h;
  std::vector<int32_t> values;
  std::vector<uint8_t> bytes() const;
};
// DATA from worker w to the job's slot base+slot, with a full payload.
Datagram contribution(const TestJob& job, int worker, uint32_t slot, bool shadow, uint32_t seq,
                      const std::vector<int32_t>& values, uint8_t flags = 0, int8_t exponent = 0);
// The header-only port marker of worker w (DATA, TO_PORT, no payload).
Datagram marker(const TestJob& job, int worker, uint32_t slot, bool shadow, uint32_t seq,
                int8_t exponent = 0);
Datagram bcast(const TestJob& job, int worker, uint32_t slot, bool shadow, uint32_t seq,
               const std::vector<int32_t>& values);
// 64 values: base + step * i, with every third one negated.
std::vector<int32_t> ramp(int32_t base, int32_t step = 1);
std::vector<int32_t> filled(int32_t value);

Status sendFrom(Differential& d, const TestJob& job, int worker, const Datagram& g,
                const std::string& what);

// The phases of hostile_cases.cc: malformed datagrams and frames that are
// not INA datagrams; a seeded random mix of everything.
Status malformedPhase(Differential& d, const CaseOptions& o);
Status randomPhase(Differential& d, const CaseOptions& o);

}  // namespace rina::p4test

#endif  // RINA_TESTS_P4_CASES_H_
