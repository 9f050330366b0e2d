// Signing CTRL requests with a switch's admin secret (lib/wire/ctrl_auth.h)
// and the controller's refusals without it, driven without sockets.
#include "wire/ctrl_auth.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>

#include "switchd/control.h"

namespace rina::ina {
namespace {

// RFC 4231 test cases 1 and 2.
TEST(CtrlAuth, HmacSha256MatchesPublishedVectors) {
  EXPECT_EQ(hmacSha256Hex(std::string(20, '\x0b'), "Hi There"),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  EXPECT_EQ(hmacSha256Hex("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(CtrlAuth, SignedRequestsPassOnceAndOnlyForTheirChallenge) {
  const std::string secret = "0123456789abcdef0123456789abcdef";
  const std::string nonce = "00112233445566778899aabbccddeeff";
  CtrlAuthSession session(secret);
  std::string_view request;
  bool authenticated = true;
  std::string error;
  // Unsigned: passes as it is, not authenticated.
  ASSERT_TRUE(session.check("STATS", &request, &authenticated, &error));
  EXPECT_EQ(request, "STATS");
  EXPECT_FALSE(authenticated);
  // Signed before any challenge: refused.
  std::string signed1 = signCtrlRequest(secret, nonce, 1, "RELEASE job=3 token=5");
  EXPECT_FALSE(session.check(signed1, &request, &authenticated, &error));
  EXPECT_NE(error.find("CHALLENGE"), std::string::npos) << error;
  session.setNonceForTesting(nonce);
  ASSERT_TRUE(session.check(signed1, &request, &authenticated, &error)) << error;
  EXPECT_TRUE(authenticated);
  EXPECT_EQ(request, "RELEASE job=3 token=5");
  // The same line again (a replay), and an older counter: refused.
  EXPECT_FALSE(session.check(signed1, &request, &authenticated, &error));
  EXPECT_NE(error.find("replay"), std::string::npos) << error;
  std::string signed2 = signCtrlRequest(secret, nonce, 2, "STATS");
  ASSERT_TRUE(session.check(signed2, &request, &authenticated, &error)) << error;
  EXPECT_FALSE(session.check(signed1, &request, &authenticated, &error));
  // Signed with another secret, or for another connection's challenge.
  EXPECT_FALSE(
      session.check(signCtrlRequest("another secret, 32 bytes long....", nonce, 9, "STATS"),
                    &request, &authenticated, &error));
  EXPECT_NE(error.find("bad mac"), std::string::npos) << error;
  EXPECT_FALSE(
      session.check(signCtrlRequest(secret, "ffeeddccbbaa99887766554433221100", 10, "STATS"),
                    &request, &authenticated, &error));
  // A changed request under a good mac.
  std::string tampered = signCtrlRequest(secret, nonce, 11, "RELEASE job=3 token=5");
  tampered.replace(tampered.find("job=3"), 5, "job=4");
  EXPECT_FALSE(session.check(tampered, &request, &authenticated, &error));
  // Malformed signature fields.
  for (const char* bad : {"STATS mac=00", "STATS seq=0 mac=" /* empty */, "STATS seq=x mac=ab",
                          "STATS seq=12 mac=ABCDEF"}) {
    EXPECT_FALSE(session.check(bad, &request, &authenticated, &error)) << bad;
    EXPECT_FALSE(authenticated) << bad;
  }
  // A fresh challenge forgets the old nonce and counter.
  std::string reply = session.challenge();
  std::string fresh;
  ASSERT_TRUE(parseChallengeReply(reply, &fresh)) << reply;
  EXPECT_NE(fresh, nonce);
  EXPECT_FALSE(
      session.check(signCtrlRequest(secret, nonce, 12, "STATS"), &request, &authenticated, &error));
  EXPECT_TRUE(
      session.check(signCtrlRequest(secret, fresh, 1, "STATS"), &request, &authenticated, &error))
      << error;
}

TEST(CtrlAuth, SecretFilesMustBePrivateAndLongEnough) {
  char dir[] = "/tmp/rina-auth-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string good = std::string(dir) + "/good", open = std::string(dir) + "/open",
                    shortFile = std::string(dir) + "/short", made = std::string(dir) + "/made";
  std::ofstream(good) << "a secret of more than sixteen bytes\n";
  std::ofstream(open) << "a secret of more than sixteen bytes\n";
  std::ofstream(shortFile) << "short\n";
  chmod(good.c_str(), 0600);
  chmod(open.c_str(), 0644);
  chmod(shortFile.c_str(), 0600);
  std::string secret, error;
  ASSERT_TRUE(readSecretFile(good, &secret, &error)) << error;
  EXPECT_EQ(secret, "a secret of more than sixteen bytes");
  EXPECT_FALSE(readSecretFile(open, &secret, &error));
  EXPECT_NE(error.find("chmod 600"), std::string::npos) << error;
  EXPECT_FALSE(readSecretFile(shortFile, &secret, &error));
  EXPECT_NE(error.find("16 to"), std::string::npos) << error;
  EXPECT_FALSE(readSecretFile(std::string(dir) + "/none", &secret, &error));
  ASSERT_TRUE(writeSecretFile(made, &error)) << error;
  struct stat st {};
  ASSERT_EQ(stat(made.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::string a, b;
  ASSERT_TRUE(readSecretFile(made, &a, &error)) << error;
  EXPECT_EQ(a.size(), 64u);
  EXPECT_FALSE(writeSecretFile(made, &error));  // never over an existing file
  for (const std::string& f : {good, open, shortFile, made}) unlink(f.c_str());
  rmdir(dir);
}

TEST(CtrlAuth, TokensAreStarredInShownRequests) {
  EXPECT_EQ(redactTokens("REGISTER job=5 token=1229801703532086340 fanin=1"),
            "REGISTER job=5 token=* fanin=1");
  EXPECT_EQ(redactTokens("RELEASE job=5 token=77"), "RELEASE job=5 token=*");
  EXPECT_EQ(redactTokens("STATS"), "STATS");
}

class NullPlane : public switchd::DataPlane {
 public:
  void installJob(const switchd::JobEntry& j) override { jobs[j.id] = j; }
  void removeJob(uint16_t job) override { jobs.erase(job); }
  void assignSlots(uint32_t, uint32_t, uint16_t) override {}
  uint64_t lastActivityMs(uint16_t) const override { return 0; }
  std::string countersJson() const override { return "{}"; }
  std::map<uint16_t, switchd::JobEntry> jobs;
};

const char* kRegister =
    "REGISTER job=3 token=987654321987654321 fanin=1 priority=1 slots=4 members=127.0.0.1:5003";

// With a secret, REGISTER, RELEASE and ENTRIES need authentication; REQUEST
// (the job's token) and STATS do not, and STATS shows no token.
TEST(CtrlAuth, ControllerWithASecretRefusesAdminVerbsUnauthenticated) {
  NullPlane dp;
  switchd::ControllerOptions o;
  o.totalSlots = 32;
  o.authRequired = true;
  switchd::Controller c(o, dp);
  std::vector<PreemptNotice> notices;
  std::string reply = c.handle(kRegister, 0, &notices);
  EXPECT_EQ(reply.rfind("ERR AUTH REGISTER", 0), 0u) << reply;
  EXPECT_TRUE(dp.jobs.empty());
  ASSERT_EQ(c.handle(kRegister, 0, &notices, nullptr, true).rfind("OK GRANT", 0), 0u);
  reply = c.handle("ENTRIES job=3", 1, &notices);
  EXPECT_EQ(reply.rfind("ERR AUTH ENTRIES", 0), 0u) << reply;
  EXPECT_EQ(reply.find("987654321987654321"), std::string::npos);
  EXPECT_EQ(c.handle("ENTRIES job=3", 1, &notices, nullptr, true).rfind("OK {", 0), 0u);
  reply = c.handle("RELEASE job=3 token=987654321987654321", 2, &notices);
  EXPECT_EQ(reply.rfind("ERR AUTH RELEASE", 0), 0u) << reply;
  EXPECT_EQ(dp.jobs.count(3), 1u);
  EXPECT_EQ(
      c.handle("REQUEST job=3 token=987654321987654321 slots=2", 3, &notices).rfind("OK GRANT", 0),
      0u);
  std::string stats = c.handle("STATS", 3, &notices);
  EXPECT_EQ(stats.rfind("OK {", 0), 0u);
  EXPECT_EQ(stats.find("987654321987654321"), std::string::npos) << stats;
  // Nor its 32-bit words, as ENTRIES writes them.
  EXPECT_EQ(stats.find("229956191"), std::string::npos) << stats;
  EXPECT_EQ(stats.find("2129924785"), std::string::npos) << stats;
  EXPECT_NE(stats.find("\"unauthenticated\":3"), std::string::npos) << stats;
  EXPECT_EQ(c.handle("RELEASE job=3 token=987654321987654321", 4, &notices, nullptr, true), "OK");
}

// A switch-set cap on priorities: above it only an authenticated REGISTER
// (and without a secret, none) may go, so nobody can preempt by priority.
TEST(CtrlAuth, PriorityAboveTheCapNeedsAuthentication) {
  NullPlane dp;
  switchd::ControllerOptions o;
  o.totalSlots = 32;
  o.priorityCap = 3;
  switchd::Controller c(o, dp);
  std::vector<PreemptNotice> notices;
  std::string reply = c.handle(
      "REGISTER job=4 token=1 fanin=1 priority=255 slots=4 members=127.0.0.1:5004", 0, &notices);
  EXPECT_EQ(reply.rfind("ERR AUTH priority 255 is above the switch's cap 3", 0), 0u) << reply;
  EXPECT_EQ(c.handle("REGISTER job=4 token=1 fanin=1 priority=3 slots=4 members=127.0.0.1:5004", 0,
                     &notices)
                .rfind("OK GRANT", 0),
            0u);
  EXPECT_EQ(c.handle("REGISTER job=5 token=2 fanin=1 priority=200 slots=4 members=127.0.0.1:5005",
                     0, &notices, nullptr, true)
                .rfind("OK GRANT", 0),
            0u);
}

}  // namespace
}  // namespace rina::ina
