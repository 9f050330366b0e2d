// Every transition of the switch pipeline, driven without sockets.
#include "switchd/pipeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <random>
#include <vector>

namespace rina::switchd {
namespace {

using ina::Header;
using ina::Type;

constexpr uint16_t kJob = 7;
constexpr uint64_t kToken = 0x5EC2E70100000063ull;  // both words non-zero
constexpr uint32_t kElems = 4;

Endpoint member(int i) { return Endpoint{0x7F000001, static_cast<uint16_t>(5000 + i)}; }

struct Datagram {
  uint8_t worker = 0;
  uint16_t slot = 0;
  bool shadow = false;
  uint32_t seq = 1;
  std::vector<int32_t> values{1, 2, 3, 4};
  int8_t exponent = 0;
  uint8_t flags = 0;
  uint16_t job = kJob;
  uint64_t token = kToken;
  uint8_t fanIn = 3;
  Type type = Type::kData;
};

std::vector<uint8_t> bytes(const Datagram& d) {
  Header h;
  h.type = d.type;
  h.flags = d.flags;
  h.job = d.job;
  h.slot = d.slot;
  h.shadow = d.shadow;
  h.worker = d.worker;
  h.fanIn = d.fanIn;
  h.seq = d.seq;
  h.exponent = d.exponent;
  h.elems = static_cast<uint16_t>(d.values.size());
  h.token = d.token;
  std::vector<uint8_t> buf(ina::kMaxDatagramBytes);
  buf.resize(ina::encode(h, d.values, buf));
  EXPECT_FALSE(buf.empty());
  return buf;
}

class PipelineTest : public ::testing::Test {
 protected:
  PipelineTest() : pipeline_(PipelineConfig{16, kElems, 0, 1}) {
    pipeline_.installJob(JobEntry{kJob, kToken, 3, {member(0), member(1), member(2)}});
    pipeline_.assignSlots(0, 8, kJob);
  }

  Verdict send(const Datagram& d) {
    out_.clear();
    return pipeline_.process(bytes(d), member(d.worker), 1000, &out_);
  }
  // Decodes emitted message i.
  Header emitted(size_t i, std::vector<int32_t>* values = nullptr) {
    const OutMessage& m = out_.messages().at(i);
    Header h;
    EXPECT_EQ(ina::decode({out_.bytes(m), m.length}, &h), ina::DecodeError::kOk);
    if (values) {
      values->clear();
      for (size_t k = 0; k < h.elems; ++k) values->push_back(ina::payloadAt(out_.bytes(m), k));
    }
    return h;
  }
  uint64_t count(Verdict v) const {
    return pipeline_.stats().verdicts[static_cast<size_t>(v)].get();
  }

  Pipeline pipeline_;
  Output out_;
};

TEST_F(PipelineTest, FirstWritesLaterAddsCompletionMulticastsSum) {
  EXPECT_EQ(send({.worker = 0, .values = {1, 2, 3, 4}, .exponent = -3}), Verdict::kFirst);
  EXPECT_TRUE(out_.messages().empty());
  EXPECT_EQ(send({.worker = 2, .values = {10, 20, 30, 40}, .exponent = 5}), Verdict::kAdded);
  EXPECT_TRUE(out_.messages().empty());
  EXPECT_EQ(send({.worker = 1, .values = {100, -200, 300, -400}, .exponent = 2}),
            Verdict::kCompleted);
  ASSERT_EQ(out_.messages().size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    std::vector<int32_t> v;
    Header h = emitted(i, &v);
    EXPECT_EQ(out_.messages()[i].to, member(static_cast<int>(i)));
    EXPECT_EQ(h.type, Type::kResult);
    EXPECT_EQ(h.seq, 1u);
    EXPECT_EQ(h.exponent, 5);  // max of the contributions' exponents
    EXPECT_EQ(h.token, kToken);
    EXPECT_EQ(h.flags & ina::kFlagOverflow, 0);
    EXPECT_EQ(v, (std::vector<int32_t>{111, -178, 333, -356}));
  }
  EXPECT_EQ(pipeline_.stats().contributions.get(), 3u);
}

TEST_F(PipelineTest, DuplicateBeforeCompletionNeverAdds) {
  EXPECT_EQ(send({.worker = 0}), Verdict::kFirst);
  EXPECT_EQ(send({.worker = 0, .flags = ina::kFlagResend}), Verdict::kDuplicatePending);
  EXPECT_TRUE(out_.messages().empty());
  EXPECT_EQ(send({.worker = 1}), Verdict::kAdded);
  EXPECT_EQ(send({.worker = 1}), Verdict::kDuplicatePending);
  EXPECT_EQ(send({.worker = 2}), Verdict::kCompleted);
  std::vector<int32_t> v;
  emitted(0, &v);
  EXPECT_EQ(v, (std::vector<int32_t>{3, 6, 9, 12}));  // each worker counted once
  EXPECT_EQ(count(Verdict::kDuplicatePending), 2u);
}

TEST_F(PipelineTest, DuplicateAfterCompletionGetsStoredResultUnicast) {
  for (uint8_t w = 0; w < 3; ++w) send({.worker = w, .values = {w, w, w, w}});
  EXPECT_EQ(send({.worker = 1, .values = {50, 50, 50, 50}, .flags = ina::kFlagResend}),
            Verdict::kDuplicateResent);
  ASSERT_EQ(out_.messages().size(), 1u);
  EXPECT_EQ(out_.messages()[0].to, member(1));
  std::vector<int32_t> v;
  Header h = emitted(0, &v);
  EXPECT_EQ(h.type, Type::kResult);
  EXPECT_NE(h.flags & ina::kFlagResend, 0);
  EXPECT_EQ(v, (std::vector<int32_t>{3, 3, 3, 3}));  // the stored sum, unchanged
}

// A RoCEv2 datagram leaves the NIC from a UDP port nobody listens on: its
// unicast answers (resent result, NACK) go to the worker's registered address.
TEST_F(PipelineTest, RoceSendersGetUnicastAnswersAtTheirMemberAddress) {
  const Endpoint nicPort{0x7F000001, 49152};
  for (uint8_t w = 0; w < 3; ++w) send({.worker = w});
  out_.clear();
  EXPECT_EQ(pipeline_.process(bytes({.worker = 2, .flags = ina::kFlagResend}), nicPort, 1000, &out_,
                              /*answerToMember=*/true),
            Verdict::kDuplicateResent);
  ASSERT_EQ(out_.messages().size(), 1u);
  EXPECT_EQ(out_.messages()[0].to, member(2));
  out_.clear();
  EXPECT_EQ(pipeline_.process(bytes({.worker = 1, .slot = 12}), nicPort, 1000, &out_, true),
            Verdict::kNack);
  ASSERT_EQ(out_.messages().size(), 1u);
  EXPECT_EQ(out_.messages()[0].to, member(1));
  // The RoCEv2 layout checks the address, not the port.
  out_.clear();
  EXPECT_EQ(pipeline_.process(bytes({.worker = 1, .slot = 12}), Endpoint{0x7F000002, 5001}, 1000,
                              &out_, true),
            Verdict::kBadSource);
  EXPECT_TRUE(out_.messages().empty());
}

// A forger that knows the token and the next seq sends ahead of the real
// worker, from another address and from the worker's address with another
// port: nothing it sends is summed or answered, and each one is counted.
TEST_F(PipelineTest, ContributionsFromAnotherEndpointThanTheWorkersAreDropped) {
  const Endpoint forgers[] = {{0x7F000002, 5000}, {0x7F000001, 6000}, {0x7F000002, 6001}};
  for (const Endpoint& f : forgers) {
    out_.clear();
    EXPECT_EQ(
        pipeline_.process(bytes({.worker = 0, .values = {1000, 1000, 1000, 1000}}), f, 1000, &out_),
        Verdict::kBadSource);
    EXPECT_TRUE(out_.messages().empty());
    // Neither a NACK for a slot the job does not own, nor a BCAST.
    EXPECT_EQ(pipeline_.process(bytes({.worker = 1, .slot = 12}), f, 1000, &out_),
              Verdict::kBadSource);
    EXPECT_EQ(
        pipeline_.process(bytes({.worker = 2, .fanIn = 3, .type = Type::kBcast}), f, 1000, &out_),
        Verdict::kBadSource);
    EXPECT_TRUE(out_.messages().empty());
  }
  EXPECT_EQ(count(Verdict::kBadSource), 9u);
  EXPECT_EQ(pipeline_.stats().contributions.get(), 0u);
  for (uint8_t w = 0; w < 3; ++w) send({.worker = w, .values = {w, w, w, w}});
  ASSERT_EQ(out_.messages().size(), 3u);
  std::vector<int32_t> v;
  emitted(0, &v);
  EXPECT_EQ(v, (std::vector<int32_t>{3, 3, 3, 3}));  // the three workers' values only
}

TEST_F(PipelineTest, ShadowSetKeepsOldResultWhileNextSliceAggregates) {
  // Window of 8 slots: seq 1 on set 0 of slot 1, seq 9 on set 1, seq 17 on set 0 again.
  for (uint8_t w = 0; w < 3; ++w) send({.worker = w, .slot = 1, .seq = 1});
  EXPECT_EQ(send({.worker = 0, .slot = 1, .shadow = true, .seq = 9}), Verdict::kFirst);
  // Worker 2 lost seq 1's result: the other set still has it.
  EXPECT_EQ(send({.worker = 2, .slot = 1, .seq = 1}), Verdict::kDuplicateResent);
  std::vector<int32_t> v;
  EXPECT_EQ(emitted(0, &v).seq, 1u);
  EXPECT_EQ(v, (std::vector<int32_t>{3, 6, 9, 12}));
  EXPECT_EQ(send({.worker = 1, .slot = 1, .shadow = true, .seq = 9}), Verdict::kAdded);
  EXPECT_EQ(send({.worker = 2, .slot = 1, .shadow = true, .seq = 9}), Verdict::kCompleted);
  // seq 17 reuses set 0: it starts fresh, and seq 1 is then stale.
  EXPECT_EQ(send({.worker = 1, .slot = 1, .seq = 17, .values = {5, 5, 5, 5}}), Verdict::kFirst);
  EXPECT_EQ(send({.worker = 0, .slot = 1, .seq = 1}), Verdict::kStale);
  EXPECT_TRUE(out_.messages().empty());
  send({.worker = 0, .slot = 1, .seq = 17, .values = {1, 1, 1, 1}});
  EXPECT_EQ(send({.worker = 2, .slot = 1, .seq = 17, .values = {1, 1, 1, 1}}), Verdict::kCompleted);
  EXPECT_EQ(emitted(0, &v).seq, 17u);
  EXPECT_EQ(v, (std::vector<int32_t>{7, 7, 7, 7}));
}

TEST_F(PipelineTest, Int32OverflowSaturatesAndIsFlagged) {
  send({.worker = 0, .values = {INT32_MAX - 1, INT32_MIN + 1, 5, -5}});
  send({.worker = 1, .values = {5, -5, 1, 1}});
  EXPECT_EQ(send({.worker = 2, .values = {0, 0, 0, 0}}), Verdict::kCompleted);
  std::vector<int32_t> v;
  Header h = emitted(0, &v);
  EXPECT_NE(h.flags & ina::kFlagOverflow, 0);
  EXPECT_EQ(v[0], INT32_MAX);  // saturated, not wrapped
  EXPECT_EQ(v[1], INT32_MIN);
  EXPECT_EQ(v[2], 6);
  EXPECT_EQ(pipeline_.stats().overflows.get(), 1u);
}

TEST_F(PipelineTest, UnknownJobAndWrongTokenAreDroppedAndCounted) {
  EXPECT_EQ(send({.job = 8}), Verdict::kUnknownJob);
  EXPECT_EQ(send({.token = kToken + 1}), Verdict::kBadToken);
  // The low 32 bits alone do not pass: the whole 64-bit token is compared.
  EXPECT_EQ(send({.token = kToken & 0xFFFFFFFFull}), Verdict::kBadToken);
  EXPECT_EQ(send({.token = kToken ^ (1ull << 63)}), Verdict::kBadToken);
  EXPECT_TRUE(out_.messages().empty());
  EXPECT_EQ(count(Verdict::kUnknownJob), 1u);
  EXPECT_EQ(count(Verdict::kBadToken), 3u);
  // Neither touched the slot: three real contributions still complete it.
  send({.worker = 0});
  send({.worker = 1});
  EXPECT_EQ(send({.worker = 2}), Verdict::kCompleted);
}

TEST_F(PipelineTest, MalformedDatagramsAreCountedByReason) {
  auto good = bytes({});
  auto run = [&](std::vector<uint8_t> b) { return pipeline_.process(b, member(0), 1, &out_); };
  EXPECT_EQ(run({good.begin(), good.begin() + 10}), Verdict::kMalformed);  // truncated
  auto bad = good;
  bad[0] = 0x51;  // version 1 (the 32-bit token layout)
  EXPECT_EQ(run(bad), Verdict::kMalformed);
  bad = good;
  bad.resize(good.size() + 4);  // longer than elems says
  EXPECT_EQ(run(bad), Verdict::kMalformed);
  const auto& m = pipeline_.stats().malformed;
  EXPECT_EQ(m[static_cast<size_t>(ina::DecodeError::kTruncated)].get(), 1u);
  EXPECT_EQ(m[static_cast<size_t>(ina::DecodeError::kBadVersion)].get(), 1u);
  EXPECT_EQ(m[static_cast<size_t>(ina::DecodeError::kBadLength)].get(), 1u);
  // Valid encoding, but more elements than this switch's payload: oversized for it.
  EXPECT_EQ(send({.values = {1, 2, 3, 4, 5}}), Verdict::kBadShape);
  EXPECT_EQ(send({.values = {1, 2, 3}}), Verdict::kBadShape);
  EXPECT_EQ(send({.fanIn = 4}), Verdict::kBadShape);
  EXPECT_EQ(send({.type = Type::kResult}), Verdict::kUnexpectedType);
  EXPECT_TRUE(out_.messages().empty());
}

TEST_F(PipelineTest, SlotNotOwnedAnswersNackAndReassignmentResets) {
  EXPECT_EQ(send({.slot = 12}), Verdict::kNack);  // never granted
  ASSERT_EQ(out_.messages().size(), 1u);
  Header h = emitted(0);
  EXPECT_EQ(h.type, Type::kNack);
  EXPECT_EQ(h.slot, 12);
  EXPECT_EQ(send({.slot = 16}), Verdict::kBadSlot);  // beyond the slot table
  send({.worker = 0, .slot = 3});
  // Preempted to job 9: job 7's contribution is gone, its next datagram NACKed.
  pipeline_.installJob(JobEntry{9, 5, 1, {member(0)}});
  pipeline_.assignSlots(3, 4, 9);
  EXPECT_EQ(send({.worker = 1, .slot = 3}), Verdict::kNack);
  EXPECT_EQ(send({.worker = 0, .slot = 3, .job = 9, .token = 5, .fanIn = 1}), Verdict::kCompleted);
  std::vector<int32_t> v;
  emitted(0, &v);
  EXPECT_EQ(v, (std::vector<int32_t>{1, 2, 3, 4}));  // nothing of job 7 left in it
}

TEST_F(PipelineTest, BcastMulticastsImmediatelyAndResendsStoredCopy) {
  // The others get the values; the root (worker 1) a header-only RESULT.
  auto check = [&] {
    ASSERT_EQ(out_.messages().size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
      std::vector<int32_t> v;
      Header h = emitted(i, &v);
      EXPECT_EQ(out_.messages()[i].to, member(static_cast<int>(i)));
      EXPECT_EQ(h.type, Type::kResult);
      EXPECT_EQ(h.seq, 1u);
      if (i == 1) {
        EXPECT_EQ(h.elems, 0u);
      } else {
        EXPECT_EQ(v, (std::vector<int32_t>{9, 8, 7, 6})) << "member " << i;
      }
    }
  };
  EXPECT_EQ(send({.worker = 1, .slot = 2, .values = {9, 8, 7, 6}, .type = Type::kBcast}),
            Verdict::kBcast);
  check();
  // A resend (the root's acknowledgement was lost) is acknowledged to the
  // root alone: the members got the slice once (one that lost it lists it
  // as missing), so a resend cannot be used to multiply traffic.
  EXPECT_EQ(send({.worker = 1, .slot = 2, .values = {9, 8, 7, 6}, .type = Type::kBcast}),
            Verdict::kBcast);
  ASSERT_EQ(out_.messages().size(), 1u);
  EXPECT_EQ(out_.messages()[0].to, member(1));
  Header h = emitted(0);
  EXPECT_EQ(h.type, Type::kResult);
  EXPECT_EQ(h.elems, 0u);
  EXPECT_TRUE(h.flags & ina::kFlagResend);
}

// What the switch sends in answer to one datagram, in bytes, against the
// datagram's own size: never more, except the one multicast that completes
// a slice (each member once). Header-only duplicates of a port marker, which
// would fetch a full result, get nothing; a marker resent at full size
// (zeros, TO_PORT: what clients resend) gets the sum.
TEST_F(PipelineTest, AnswersToResendsAreNeverLargerThanTheirRequest) {
  auto answered = [&](const Datagram& d, Verdict* v) {
    std::vector<uint8_t> b = bytes(d);
    out_.clear();
    *v = pipeline_.process(b, member(d.worker), 1000, &out_);
    size_t total = 0;
    for (const OutMessage& m : out_.messages()) total += m.length;
    return std::make_pair(total, b.size());
  };
  Verdict v;
  send({.worker = 1, .values = {}, .flags = ina::kFlagToPort});
  send({.worker = 0, .values = {5, 6, 7, 8}});
  send({.worker = 2, .values = {1, 1, 1, 1}});
  // 100 header-only duplicates of the marker: not one byte back.
  for (int i = 0; i < 100; ++i) {
    auto [out, in] = answered({.worker = 1, .values = {}, .flags = ina::kFlagToPort}, &v);
    ASSERT_EQ(out, 0u) << "duplicate " << i << " of a " << in << "-byte marker";
    ASSERT_EQ(v, Verdict::kDuplicateShort);
  }
  EXPECT_EQ(count(Verdict::kDuplicateShort), 100u);
  // Full-size duplicates from every member: at most their own size back.
  for (uint8_t w = 0; w < 3; ++w) {
    auto [out, in] = answered({.worker = w, .values = {0, 0, 0, 0}, .flags = ina::kFlagToPort}, &v);
    EXPECT_EQ(v, Verdict::kDuplicateResent) << "worker " << int(w);
    EXPECT_LE(out, in) << "worker " << int(w);
    EXPECT_GT(out, 0u) << "worker " << int(w);
  }
  // The padded marker resend brought the port its sum.
  answered({.worker = 1, .values = {0, 0, 0, 0}, .flags = ina::kFlagToPort}, &v);
  std::vector<int32_t> sum;
  emitted(0, &sum);
  EXPECT_EQ(sum, (std::vector<int32_t>{6, 7, 8, 9}));
  // BCAST resends: the root's size at most, to the root only.
  send({.worker = 0, .slot = 3, .values = {1, 2, 3, 4}, .type = Type::kBcast});
  for (int i = 0; i < 32; ++i) {
    auto [out, in] =
        answered({.worker = 0, .slot = 3, .values = {1, 2, 3, 4}, .type = Type::kBcast}, &v);
    ASSERT_LE(out, in) << "resend " << i;
    ASSERT_EQ(out_.messages().size(), 1u);
    ASSERT_EQ(out_.messages()[0].to, member(0));
  }
}

TEST_F(PipelineTest, ToPortSendsResultToThePortAndAcksTheOthers) {
  send({.worker = 0});
  send({.worker = 2, .flags = ina::kFlagToPort});
  EXPECT_EQ(send({.worker = 1}), Verdict::kCompleted);
  ASSERT_EQ(out_.messages().size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    Header h = emitted(i);
    EXPECT_EQ(h.type, Type::kResult);
    EXPECT_EQ(h.elems, i == 2 ? kElems : 0u) << "member " << i;
  }
  EXPECT_EQ(send({.worker = 0}), Verdict::kDuplicateResent);
  EXPECT_EQ(emitted(0).elems, 0u);
  EXPECT_EQ(send({.worker = 2}), Verdict::kDuplicateResent);
  EXPECT_EQ(emitted(0).elems, kElems);
}

// A port marker (header-only DATA with TO_PORT) counts as a contribution of
// zeros: first or later, the port gets the others' sum alone, the others an
// acknowledgement, and a resend of the marker gets the stored sum. Without
// TO_PORT, or as a BCAST, an empty payload is malformed.
TEST_F(PipelineTest, PortMarkerCountsAsZeros) {
  EXPECT_EQ(send({.worker = 1, .values = {}, .exponent = 9, .flags = ina::kFlagToPort}),
            Verdict::kFirst);
  EXPECT_EQ(send({.worker = 0, .values = {5, 6, 7, 8}, .exponent = 1}), Verdict::kAdded);
  EXPECT_EQ(send({.worker = 2, .values = {1, -1, 1, -1}, .exponent = 2}), Verdict::kCompleted);
  ASSERT_EQ(out_.messages().size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    std::vector<int32_t> v;
    Header h = emitted(i, &v);
    EXPECT_EQ(h.exponent, 9);  // the marker's announced exponent counts
    if (i == 1) {
      EXPECT_EQ(v, (std::vector<int32_t>{6, 5, 8, 7}));
    } else {
      EXPECT_EQ(h.elems, 0u) << "member " << i;
    }
  }
  // Resent header-only, it would fetch more than it is: nothing comes back.
  EXPECT_EQ(send({.worker = 1, .values = {}, .flags = ina::kFlagToPort | ina::kFlagResend}),
            Verdict::kDuplicateShort);
  EXPECT_TRUE(out_.messages().empty());
  // Resent at full size (zeros), as the client resends a marker: the sum.
  EXPECT_EQ(send({.worker = 1, .values = {0, 0, 0, 0}, .flags = ina::kFlagToPort}),
            Verdict::kDuplicateResent);
  std::vector<int32_t> v;
  emitted(0, &v);
  EXPECT_EQ(v, (std::vector<int32_t>{6, 5, 8, 7}));
  // The marker last: the sum already held stays.
  send({.seq = 2, .values = {1, 2, 3, 4}});
  send({.worker = 2, .seq = 2, .values = {10, 20, 30, 40}});
  EXPECT_EQ(send({.worker = 1, .seq = 2, .values = {}, .flags = ina::kFlagToPort}),
            Verdict::kCompleted);
  Header h = emitted(1, &v);
  EXPECT_EQ(h.elems, kElems);
  EXPECT_EQ(v, (std::vector<int32_t>{11, 22, 33, 44}));
  EXPECT_EQ(pipeline_.stats().contributions.get(), 6u);
  // No TO_PORT, or a BCAST: not a marker, an empty payload.
  Header bad;
  bad.type = Type::kData;
  bad.job = kJob;
  bad.fanIn = 3;
  bad.seq = 3;
  bad.token = kToken;
  bad.elems = 0;
  std::vector<uint8_t> buf(ina::kHeaderBytes);
  ASSERT_TRUE(ina::encodeHeader(bad, buf) == false);
  bad.type = Type::kBcast;
  bad.flags = ina::kFlagToPort;
  ASSERT_TRUE(ina::encodeHeader(bad, buf) == false);
  bad.type = Type::kData;
  ASSERT_TRUE(ina::encodeHeader(bad, buf));      // the marker itself
  buf[1] = static_cast<uint8_t>(buf[1] & 0xF0);  // TO_PORT cleared on the wire
  out_.clear();
  EXPECT_EQ(pipeline_.process(buf, member(0), 1000, &out_), Verdict::kMalformed);
  EXPECT_EQ(pipeline_.stats().malformed[static_cast<size_t>(ina::DecodeError::kEmptyPayload)].get(),
            1u);
}

// A set of port markers alone (a float call's exponent-only prologue) sums
// to zero: every member gets a header-only RESULT with the max exponent, and
// nobody a payload of zeros; a marker resent at full size (zeros) after
// that gets the same acknowledgement back. A full-size contribution in the
// set keeps the usual answer: the port gets the sum.
TEST_F(PipelineTest, MarkersAloneAreAnsweredHeaderOnly) {
  send({.worker = 0, .values = {}, .exponent = 3, .flags = ina::kFlagToPort});
  send({.worker = 1, .values = {}, .exponent = 7, .flags = ina::kFlagToPort});
  EXPECT_EQ(send({.worker = 2, .values = {}, .exponent = 5, .flags = ina::kFlagToPort}),
            Verdict::kCompleted);
  ASSERT_EQ(out_.messages().size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const Header h = emitted(i);
    EXPECT_EQ(h.type, Type::kResult);
    EXPECT_EQ(h.elems, 0u) << "member " << i;
    EXPECT_EQ(h.exponent, 7) << "member " << i;
    EXPECT_EQ(out_.messages()[i].length, ina::kHeaderBytes) << "member " << i;
  }
  EXPECT_EQ(send({.worker = 2, .values = {0, 0, 0, 0}, .flags = ina::kFlagToPort}),
            Verdict::kDuplicateResent);
  ASSERT_EQ(out_.messages().size(), 1u);
  EXPECT_EQ(emitted(0).elems, 0u);
  // A first copy lost and resent at full size is a contribution with values.
  send({.worker = 0, .seq = 2, .values = {}, .flags = ina::kFlagToPort});
  send({.worker = 1, .seq = 2, .values = {}, .flags = ina::kFlagToPort});
  EXPECT_EQ(send({.worker = 2, .seq = 2, .values = {0, 0, 0, 0}, .flags = ina::kFlagToPort}),
            Verdict::kCompleted);
  ASSERT_EQ(out_.messages().size(), 3u);
  std::vector<int32_t> v;
  EXPECT_EQ(emitted(2, &v).elems, kElems);
  EXPECT_EQ(v, (std::vector<int32_t>{0, 0, 0, 0}));
  EXPECT_EQ(emitted(0).elems, 0u);
  EXPECT_EQ(emitted(1).elems, 0u);
}

TEST(PipelineShards, ShardServesOnlyItsSlots) {
  Pipeline p(PipelineConfig{16, kElems, 1, 2});
  p.installJob(JobEntry{kJob, kToken, 1, {member(0)}});
  p.assignSlots(0, 16, kJob);
  Output out;
  EXPECT_EQ(p.process(bytes({.slot = 2, .fanIn = 1}), member(0), 1, &out), Verdict::kBadSlot);
  EXPECT_EQ(p.process(bytes({.slot = 3, .fanIn = 1}), member(0), 1, &out), Verdict::kCompleted);
  EXPECT_EQ(p.owner(3), kJob);
  EXPECT_EQ(p.lastActivityMs(kJob), 1u);
}

// A full-size payload (vector body and tail) through a slot of fan-in 3, the
// completing contribution summed straight into the result: every member gets
// the element-wise sum saturated after each addition (computed here in 64
// bits), the overflow flag exactly when some element clamped, and a resend
// afterwards gets the same sum from the slot.
TEST(PipelineFullPayload, CompletionSendsTheSaturatedSumToEveryMember) {
  constexpr uint32_t kBig = 1027;
  std::mt19937 rng(5);
  for (const bool clampLast : {false, true}) {
    Pipeline p(PipelineConfig{4, kBig, 0, 1});
    p.installJob(JobEntry{kJob, kToken, 3, {member(0), member(1), member(2)}});
    p.assignSlots(0, 4, kJob);
    std::vector<std::vector<int32_t>> contributions(3, std::vector<int32_t>(kBig));
    for (auto& c : contributions) {
      for (int32_t& x : c) x = static_cast<int32_t>(rng()) / 4;  // no clamping on their own
    }
    // Near the limits in one element: only the last addition clamps it.
    contributions[0][kBig - 1] = INT32_MAX - 10;
    contributions[1][kBig - 1] = 5;
    contributions[2][kBig - 1] = clampLast ? 6 : 5;
    contributions[0][100] = INT32_MIN + 10;
    contributions[1][100] = -5;
    contributions[2][100] = clampLast ? -6 : -5;
    std::vector<int32_t> want(kBig);
    bool wantOverflow = false;
    for (size_t i = 0; i < kBig; ++i) {
      int64_t sum = 0;
      for (const auto& c : contributions) {
        const int64_t next = std::clamp<int64_t>(sum + c[i], INT32_MIN, INT32_MAX);
        wantOverflow |= next != sum + c[i];
        sum = next;
      }
      want[i] = static_cast<int32_t>(sum);
    }
    Output out;
    for (uint8_t w = 0; w < 3; ++w) {
      out.clear();
      const Verdict v =
          p.process(bytes({.worker = w, .values = contributions[w]}), member(w), 1, &out);
      EXPECT_EQ(v, w < 2 ? (w == 0 ? Verdict::kFirst : Verdict::kAdded) : Verdict::kCompleted);
    }
    auto check = [&](const OutMessage& m, const char* what) {
      Header h;
      ASSERT_EQ(ina::decode({out.bytes(m), m.length}, &h), ina::DecodeError::kOk) << what;
      ASSERT_EQ(h.elems, kBig) << what;
      EXPECT_EQ((h.flags & ina::kFlagOverflow) != 0, wantOverflow) << what;
      for (size_t i = 0; i < kBig; ++i) {
        ASSERT_EQ(ina::payloadAt(out.bytes(m), i), want[i]) << what << " element " << i;
      }
    };
    ASSERT_EQ(out.messages().size(), 3u);
    for (const OutMessage& m : out.messages()) check(m, "result");
    out.clear();
    EXPECT_EQ(p.process(bytes({.worker = 2, .values = contributions[2], .flags = ina::kFlagResend}),
                        member(2), 2, &out),
              Verdict::kDuplicateResent);
    ASSERT_EQ(out.messages().size(), 1u);
    check(out.messages()[0], "resent result");
  }
}

}  // namespace
}  // namespace rina::switchd
