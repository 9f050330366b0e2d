// CTRL protocol parsing, the ESA slot allocator and the controller.
#include "switchd/control.h"

#include <gtest/gtest.h>

#include <map>

#include "wire/ctrl_protocol.h"

namespace rina::switchd {
namespace {

using ina::CtrlRequest;
using ina::CtrlVerb;

TEST(CtrlProtocol, ParsesEveryVerb) {
  CtrlRequest r;
  std::string err;
  ASSERT_TRUE(
      ina::parseCtrlRequest("REGISTER job=7 token=18446744073709551615 fanin=2 priority=3 slots=64 "
                            "members=127.0.0.1:5000,10.0.0.2:6000",
                            &r, &err))
      << err;
  EXPECT_EQ(r.verb, CtrlVerb::kRegister);
  EXPECT_EQ(r.job, 7);
  EXPECT_EQ(r.token, 0xFFFFFFFFFFFFFFFFull);  // tokens are 64 bits
  EXPECT_EQ(r.fanIn, 2);
  EXPECT_EQ(r.priority, 3);
  EXPECT_EQ(r.slots, 64u);
  ASSERT_EQ(r.members.size(), 2u);
  EXPECT_EQ(r.members[1].toString(), "10.0.0.2:6000");
  // Formatting and parsing again gives the same request.
  CtrlRequest again;
  ASSERT_TRUE(ina::parseCtrlRequest(ina::formatCtrlRequest(r), &again, &err)) << err;
  EXPECT_EQ(again.members, r.members);
  EXPECT_EQ(again.token, r.token);
  ASSERT_TRUE(ina::parseCtrlRequest("REQUEST job=7 token=1 slots=8", &r, &err)) << err;
  EXPECT_EQ(r.verb, CtrlVerb::kRequest);
  ASSERT_TRUE(ina::parseCtrlRequest("RELEASE job=7 token=1", &r, &err)) << err;
  ASSERT_TRUE(ina::parseCtrlRequest("STATS", &r, &err)) << err;
  ASSERT_TRUE(ina::parseCtrlRequest("ENTRIES job=3", &r, &err)) << err;
  EXPECT_EQ(r.job, 3);
}

TEST(CtrlProtocol, RejectsMalformedRequests) {
  const char* bad[] = {
      "",
      "HELLO",
      "STATS extra=1",
      "RELEASE job=7",                             // missing token
      "RELEASE job=0 token=1",                     // job 0
      "RELEASE job=65536 token=1",                 // job out of range
      "RELEASE job=7 token=18446744073709551616",  // token out of range (2^64)
      "RELEASE job=7 token=-1",
      "RELEASE job=7 token=1x",
      "RELEASE  job=7 token=1",           // empty field
      "RELEASE job=7 job=7 token=1",      // duplicate
      "RELEASE job=7 token=1 color=red",  // unknown field
      "RELEASE job= token=1",
      "REQUEST job=7 token=1 slots=0",
      "REQUEST job=7 token=1 slots=40000",
      "REGISTER job=7 token=1 fanin=2 priority=1 slots=8 members=127.0.0.1:5000",  // 1 of 2
      "REGISTER job=7 token=1 fanin=33 priority=1 slots=8 members=127.0.0.1:5000",
      "REGISTER job=7 token=1 fanin=1 priority=256 slots=8 members=127.0.0.1:5000",
      "REGISTER job=7 token=1 fanin=1 priority=1 slots=8 members=127.0.0.1:70000",
      "REGISTER job=7 token=1 fanin=1 priority=1 slots=8 members=localhost:5000",
      "REGISTER job=7 token=1 fanin=1 priority=1 slots=8 members=127.0.0.1:5000,",
  };
  for (const char* line : bad) {
    CtrlRequest r;
    std::string err;
    EXPECT_FALSE(ina::parseCtrlRequest(line, &r, &err)) << "accepted: " << line;
    EXPECT_FALSE(err.empty()) << line;
  }
}

TEST(CtrlProtocol, GrantAndNoticeRoundTrip) {
  ina::Grant g{7, 100, 28, 256, 9100, 2}, back;
  ASSERT_TRUE(ina::parseGrant(ina::formatGrant(g), &back));
  EXPECT_EQ(back.base, 100u);
  EXPECT_EQ(back.length, 28u);
  EXPECT_EQ(back.payloadElems, 256u);
  EXPECT_EQ(back.ports, 2);
  EXPECT_FALSE(
      ina::parseGrant("OK GRANT job=7 base=32760 length=9 payload=64 port=1 ports=1", &back));
  EXPECT_FALSE(ina::parseGrant("ERR no", &back));
  ina::PreemptNotice n{3, 10, 5}, nb;
  ASSERT_TRUE(ina::parsePreemptNotice(ina::formatPreemptNotice(n), &nb));
  EXPECT_EQ(nb.job, 3);
  EXPECT_EQ(nb.length, 5u);
}

TEST(SlotAllocator, FreeSlotsFirstThenCheapestVictim) {
  SlotAllocator a(16);
  std::vector<Preemption> taken;
  auto never = [](uint16_t) { return -1; };
  SlotRange r1 = a.allocate(1, 6, never, &taken);
  EXPECT_EQ(r1.size(), 6u);
  SlotRange r2 = a.allocate(2, 6, never, &taken);
  EXPECT_EQ(r2.size(), 6u);
  EXPECT_TRUE(taken.empty());
  EXPECT_EQ(a.freeSlots(), 4u);
  // Nobody preemptable: only the 4 free slots.
  SlotRange r3 = a.allocate(3, 8, never, &taken);
  EXPECT_EQ(r3.size(), 4u);
  EXPECT_TRUE(taken.empty());
  // Job 4 may take job 1 (cheap) or job 2 (dear): it takes 6 of job 1's slots.
  std::map<uint16_t, int> cost{{1, 1}, {2, 5}, {3, -1}};
  SlotRange r4 = a.allocate(
      4, 6, [&](uint16_t o) { return cost[o]; }, &taken);
  EXPECT_EQ(r4.size(), 6u);
  ASSERT_EQ(taken.size(), 1u);
  EXPECT_EQ(taken[0].job, 1);
  EXPECT_EQ(taken[0].range.size(), 6u);
  EXPECT_EQ(a.ownedBy(1), 0u);
  EXPECT_EQ(a.ownedBy(2), 6u);
  EXPECT_EQ(a.ownedBy(3), 4u);
  for (uint32_t s = r4.begin; s < r4.end; ++s) EXPECT_EQ(a.owner(s), 4);
  a.release(4);
  EXPECT_EQ(a.freeSlots(), 6u);
}

// A data plane that records what the controller asked for.
class FakeDataPlane : public DataPlane {
 public:
  void installJob(const JobEntry& job) override { jobs[job.id] = job; }
  void removeJob(uint16_t job) override {
    jobs.erase(job);
    removed.push_back(job);
  }
  void assignSlots(uint32_t begin, uint32_t end, uint16_t job) override {
    for (uint32_t s = begin; s < end; ++s) owner[s] = job;
  }
  uint64_t lastActivityMs(uint16_t job) const override {
    auto it = activity.find(job);
    return it == activity.end() ? 0 : it->second;
  }
  std::string countersJson() const override { return "{}"; }

  std::map<uint16_t, JobEntry> jobs;
  std::map<uint32_t, uint16_t> owner;
  std::map<uint16_t, uint64_t> activity;
  std::vector<uint16_t> removed;
};

std::string registerLine(int job, int priority, int slots) {
  return "REGISTER job=" + std::to_string(job) + " token=" + std::to_string(job * 11) +
         " fanin=1 priority=" + std::to_string(priority) + " slots=" + std::to_string(slots) +
         " members=127.0.0.1:" + std::to_string(5000 + job);
}

class ControllerTest : public ::testing::Test {
 protected:
  ControllerTest() : controller_(ControllerOptions{32, 64, 9100, 2, 1000}, dp_) {}
  ina::Grant handleGrant(const std::string& line, uint64_t now) {
    std::string reply = controller_.handle(line, now, &notices_);
    ina::Grant g;
    EXPECT_TRUE(ina::parseGrant(reply, &g)) << reply;
    return g;
  }
  FakeDataPlane dp_;
  Controller controller_;
  std::vector<ina::PreemptNotice> notices_;
};

TEST_F(ControllerTest, HigherPriorityPreemptsLowerAndVictimIsTold) {
  ina::Grant low = handleGrant(registerLine(1, 1, 24), 0);
  EXPECT_EQ(low.length, 24u);
  EXPECT_EQ(low.payloadElems, 64u);
  EXPECT_EQ(low.port, 9100);
  EXPECT_EQ(low.ports, 2);
  ASSERT_EQ(dp_.jobs.count(1), 1u);
  dp_.activity[1] = 10;  // busy
  ina::Grant high = handleGrant(registerLine(2, 5, 16), 20);
  EXPECT_EQ(high.length, 16u);
  ASSERT_FALSE(notices_.empty());
  uint32_t lost = 0;
  for (const auto& n : notices_) {
    EXPECT_EQ(n.job, 1);
    lost += n.length;
  }
  EXPECT_EQ(lost, 8u);  // 8 free slots first, then 8 of job 1's
  for (uint32_t s = high.base; s < high.base + high.length; ++s) EXPECT_EQ(dp_.owner[s], 2);
  EXPECT_EQ(controller_.stats().preemptedSlots, 8u);
  EXPECT_GE(controller_.stats().preemptions, 1u);
  // A lower-priority, busy job cannot take anything back now.
  notices_.clear();
  dp_.activity[2] = 30;
  ina::Grant again = handleGrant("REQUEST job=1 token=11 slots=24", 40);
  EXPECT_EQ(again.length, 16u);  // its own 16 remaining slots
  EXPECT_TRUE(notices_.empty());
}

TEST_F(ControllerTest, IdleJobIsPreemptedByAnyPriority) {
  handleGrant(registerLine(1, 9, 32), 0);
  dp_.activity[1] = 100;
  ina::Grant busy = handleGrant(registerLine(2, 1, 8), 500);  // job 1 active 400 ms ago
  EXPECT_EQ(busy.length, 0u);
  ina::Grant later = handleGrant("REQUEST job=2 token=22 slots=8", 2000);  // idle 1900 ms
  EXPECT_EQ(later.length, 8u);
  ASSERT_EQ(notices_.size(), 1u);
  EXPECT_EQ(notices_[0].job, 1);
}

// A REGISTER for a job id that is live with another token is refused with
// the TAKEN reply, leaves the job as it was, and the owner keeps it; a
// REGISTER with the owner's token (the owner re-registering) is taken.
TEST_F(ControllerTest, RegisterOfALiveJobWithAnotherTokenIsRefusedAsTaken) {
  handleGrant(
      "REGISTER job=3 token=12345678901234567890 fanin=1 priority=1 slots=4 "
      "members=127.0.0.1:5003",
      0);
  const std::string reply = controller_.handle(
      "REGISTER job=3 token=12345678901234567891 fanin=1 priority=1 slots=4 "
      "members=10.0.0.9:9",
      1, &notices_);
  EXPECT_EQ(reply.rfind(std::string(ina::kCtrlTakenReply) + " ", 0), 0u) << reply;
  EXPECT_TRUE(ina::isTakenReply(reply));
  EXPECT_FALSE(ina::isTakenReply("ERR unknown job 3"));
  ASSERT_EQ(dp_.jobs.count(3), 1u);
  EXPECT_EQ(dp_.jobs[3].token, 12345678901234567890ull);
  EXPECT_EQ(dp_.jobs[3].members.at(0).toString(), "127.0.0.1:5003");
  // The 32 low bits alone are not the token.
  EXPECT_EQ(
      controller_
          .handle("RELEASE job=3 token=" + std::to_string(12345678901234567890ull & 0xFFFFFFFFull),
                  2, &notices_)
          .rfind("ERR", 0),
      0u);
  EXPECT_EQ(controller_
                .handle("REGISTER job=3 token=12345678901234567890 fanin=1 priority=1 slots=4 "
                        "members=127.0.0.1:5004",
                        3, &notices_)
                .rfind("OK GRANT", 0),
            0u);
  EXPECT_EQ(controller_.handle("RELEASE job=3 token=12345678901234567890", 4, &notices_), "OK");
}

// One address listed for several workers would get every result and
// broadcast once per listing: such a REGISTER is refused.
TEST_F(ControllerTest, RegisterListingAMemberTwiceIsRefused) {
  std::string members = "127.0.0.1:7000";
  for (int i = 1; i < 32; ++i) members += ",127.0.0.1:7000";
  std::string reply = controller_.handle(
      "REGISTER job=4 token=99 fanin=32 priority=1 slots=4 members=" + members, 0, &notices_);
  EXPECT_EQ(reply.rfind("ERR ", 0), 0u) << reply;
  EXPECT_NE(reply.find("127.0.0.1:7000 twice"), std::string::npos) << reply;
  EXPECT_EQ(dp_.jobs.count(4), 0u);
  // Same address, other ports: distinct members.
  handleGrant(
      "REGISTER job=4 token=99 fanin=2 priority=1 slots=4 members=127.0.0.1:7000,127.0.0.1:7001",
      1);
  EXPECT_EQ(dp_.jobs.count(4), 1u);
}

TEST_F(ControllerTest, TokensReleaseStatsAndEntries) {
  handleGrant(registerLine(3, 1, 4), 0);
  EXPECT_EQ(controller_.handle("RELEASE job=3 token=1", 1, &notices_).rfind("ERR", 0), 0u);
  EXPECT_EQ(controller_.handle("RELEASE job=4 token=1", 1, &notices_).rfind("ERR", 0), 0u);
  EXPECT_EQ(controller_
                .handle("REGISTER job=3 token=1 fanin=1 priority=1 slots=4 "
                        "members=127.0.0.1:5003",
                        1, &notices_)
                .rfind("ERR", 0),
            0u);  // another token for a registered job
  std::string entries = controller_.handle("ENTRIES job=3", 1, &notices_);
  EXPECT_NE(entries.find("\"mcast_grp\":3"), std::string::npos) << entries;
  EXPECT_NE(entries.find("\"dst_addr\":\"127.0.0.1\",\"dst_port\":5003"), std::string::npos)
      << entries;
  // The source check's entry: worker 0 of job 3 counts only from its endpoint.
  EXPECT_NE(entries.find("\"table\":\"RinaIngress.source_table\",\"match\":{\"hdr.ina.job\":3,"
                         "\"hdr.ina.worker\":0},\"action\":\"RinaIngress.set_source\","
                         "\"params\":{\"src_addr\":\"127.0.0.1\",\"src_port\":5003}"),
            std::string::npos)
      << entries;
  EXPECT_NE(entries.find("\"register\":\"RinaIngress.slot_owner\",\"index\":[0,4]"),
            std::string::npos)
      << entries;
  std::string stats = controller_.handle("STATS", 1, &notices_);
  EXPECT_NE(stats.find("\"slots_used\":4"), std::string::npos) << stats;
  EXPECT_EQ(controller_.handle("RELEASE job=3 token=33", 2, &notices_), "OK");
  EXPECT_EQ(dp_.removed, std::vector<uint16_t>{3});
  EXPECT_EQ(controller_.allocator().freeSlots(), 32u);
  EXPECT_GE(controller_.stats().rejected, 3u);
}

}  // namespace
}  // namespace rina::switchd
