// The host segment of one-shot calls: prepare(bytes) writes, through the
// rank's own mapping, every page of its two slots that a call of that size
// uses (so the call that alternates to the other slot finds it ready too),
// and only those; checked against the kernel's page tables (/proc/self/smaps:
// the dirty bytes of each rank's mapping), which MAP_POPULATE alone leaves
// clean. The write keeps the bytes (a peer may still read the slot's last
// call), and the other ranks' slots are left alone. A shrink's renumber
// keeps each member in the slots and control words it had, drops the
// others, and starts every member's rounds from the base it is given. A
// segment's spare slots are not resident until a grow gives them to a
// joiner, who sees what the members write and whose rounds go on above
// every member's; the name stays while the rank in slot 0 holds it.
#include "transport/shm_group.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/socket.h"

namespace rina::transport {
namespace {

// The sum of the smaps fields `fields` (kB) of the mapping that holds addr,
// or -1.
long smapsKbOfMappingAt(const void* addr, const std::vector<std::string>& fields) {
  std::ifstream smaps("/proc/self/smaps");
  const auto a = reinterpret_cast<uintptr_t>(addr);
  std::string line;
  bool inside = false;
  long dirty = -1;
  while (std::getline(smaps, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > 20) {
      if (inside) return dirty;
      inside = a >= lo && a < hi;
      if (inside) dirty = 0;
      continue;
    }
    if (!inside) continue;
    for (const std::string& f : fields) {
      long kb = 0;
      if (std::sscanf(line.c_str(), (f + ": %ld kB").c_str(), &kb) == 1) dirty += kb;
    }
  }
  return dirty;
}

// Dirty kB (shared + private) of the mapping that holds addr, or -1.
long dirtyKbOfMappingAt(const void* addr) {
  return smapsKbOfMappingAt(addr, {"Shared_Dirty", "Private_Dirty"});
}

struct Group {
  static constexpr int kRanks = 3;
  static constexpr size_t kSlotBytes = 64 << 10;
  std::unique_ptr<ShmGroup> g[kRanks];
  uint64_t commId = 0;

  explicit Group(uint64_t salt, int spares = 0) {
    commId = salt << 32 | static_cast<uint64_t>(getpid());
    for (int r = 0; r < kRanks; ++r) {
      EXPECT_TRUE(ShmGroup::join(commId, static_cast<int>(getpid()), r, kRanks, spares, kSlotBytes,
                                 deadlineAfterMs(10000), &g[r])
                      .ok());
    }
    for (int r = 0; r < kRanks; ++r) {
      EXPECT_TRUE(g[r] && g[r]->waitJoined(deadlineAfterMs(10000), nullptr).ok());
    }
  }
  // Dirty kB of rank r's mapping beyond the header and control words' page(s).
  long slotDirtyKb(int r) const {
    const long headerKb =
        static_cast<long>((g[r]->slot(0, 0) - reinterpret_cast<char*>(&g[r]->control(0))) / 1024) +
        4;
    const long dirty = dirtyKbOfMappingAt(g[r]->slot(r, 0));
    EXPECT_GE(dirty, 0) << "no mapping found for rank " << r;
    return dirty < headerKb ? 0 : dirty - headerKb;
  }
};

TEST(ShmGroupTest, PrepareWritesBothOwnSlotsUpToTheCallSizeInOwnMapping) {
  Group grp(0x5e57);
  for (int r = 0; r < Group::kRanks; ++r) {
    ASSERT_TRUE(grp.g[r]);
    ASSERT_EQ(grp.g[r]->slotBytes(), Group::kSlotBytes);
    EXPECT_EQ(grp.slotDirtyKb(r), 0) << "rank " << r << " after join";
  }
  const long headerKb =
      static_cast<long>((grp.g[0]->slot(0, 0) - reinterpret_cast<char*>(&grp.g[0]->control(0))) /
                        1024) +
      4;
  // 20000 bytes: 5 pages of each of its two slots.
  for (int r = 0; r < Group::kRanks; ++r) grp.g[r]->prepare(20000);
  for (int r = 0; r < Group::kRanks; ++r) {
    const long dirty = dirtyKbOfMappingAt(grp.g[r]->slot(r, 0));
    EXPECT_GE(dirty, 2 * 5 * 4) << "rank " << r;
    EXPECT_LE(dirty, 2 * 5 * 4 + headerKb) << "rank " << r;
  }
  // Then the whole slot; a larger call than a slot holds readies no more.
  for (int r = 0; r < Group::kRanks; ++r) grp.g[r]->prepare(Group::kSlotBytes + 4096);
  for (int r = 0; r < Group::kRanks; ++r) {
    const long dirty = dirtyKbOfMappingAt(grp.g[r]->slot(r, 0));
    EXPECT_GE(dirty, static_cast<long>(2 * Group::kSlotBytes / 1024)) << "rank " << r;
    EXPECT_LE(dirty, static_cast<long>(2 * Group::kSlotBytes / 1024) + headerKb) << "rank " << r;
  }
}

TEST(ShmGroupTest, PrepareKeepsTheBytesOfOwnSlotsAndWritesNoOtherRanks) {
  Group grp(0x5e58);
  for (int r = 0; r < Group::kRanks; ++r) ASSERT_TRUE(grp.g[r]);
  // Rank 1's slots hold a call a peer may still be reading.
  for (int which = 0; which < 2; ++which) {
    char* s = grp.g[1]->slot(1, which);
    for (size_t i = 0; i < Group::kSlotBytes; ++i) s[i] = static_cast<char>(i * 7 + which + 1);
  }
  grp.g[1]->prepare(Group::kSlotBytes);
  grp.g[0]->prepare(Group::kSlotBytes);
  for (int which = 0; which < 2; ++which) {
    const char* s = grp.g[2]->slot(1, which);  // read through a third mapping
    for (size_t i = 0; i < Group::kSlotBytes; ++i) {
      ASSERT_EQ(s[i], static_cast<char>(i * 7 + which + 1)) << "slot " << which << " byte " << i;
    }
  }
  for (int r : {0, 2}) {
    for (int which = 0; which < 2; ++which) {
      const char* s = grp.g[2]->slot(r, which);
      for (size_t i = 0; i < Group::kSlotBytes; ++i) {
        ASSERT_EQ(s[i], 0) << "rank " << r << " slot " << which << " byte " << i;
      }
    }
  }
}

TEST(ShmGroupTest, RenumberKeepsEachMembersSlotsAndStartsRoundsFromTheBase) {
  Group grp(0x5e59);
  for (int r = 0; r < Group::kRanks; ++r) ASSERT_TRUE(grp.g[r]);
  // Ranks 0 and 2 stay (they become 0 and 1) after different numbers of
  // rounds, as after a call one of them gave up half way.
  for (int i = 0; i < 5; ++i) grp.g[0]->nextRound();
  for (int i = 0; i < 3; ++i) grp.g[2]->nextRound();
  grp.g[2]->control(2).announced.store(7 << 8 | 1);
  char* oldSlot[2][2];
  ShmGroupRank* oldControl[2];
  for (int i = 0; i < 2; ++i) {
    const int old = i == 0 ? 0 : 2;
    oldControl[i] = &grp.g[0]->control(old);
    for (int which = 0; which < 2; ++which) oldSlot[i][which] = grp.g[0]->slot(old, which);
  }
  const uint32_t base = 5;
  grp.g[0]->renumber({0, 2}, 0, base);
  grp.g[2]->renumber({0, 2}, 1, base);
  EXPECT_EQ(grp.g[0]->ranks(), 2);
  EXPECT_EQ(grp.g[2]->rank(), 1);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(&grp.g[0]->control(i), oldControl[i]) << "rank " << i;
    for (int which = 0; which < 2; ++which) {
      EXPECT_EQ(grp.g[0]->slot(i, which), oldSlot[i][which]) << "rank " << i << " slot " << which;
    }
  }
  // Bytes rank 1 writes in its slot through its mapping are what rank 0
  // reads as rank 1's through its own.
  std::memcpy(grp.g[2]->slot(1, 1), "renumbered", 11);
  EXPECT_STREQ(grp.g[0]->slot(1, 1), "renumbered");
  for (int r : {0, 2}) {
    EXPECT_EQ(grp.g[r]->lastRound(), base) << "old rank " << r;
    EXPECT_EQ(grp.g[r]->nextRound(), base + 1) << "old rank " << r;
  }
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(grp.g[0]->control(i).done.load(), base) << "rank " << i;
    EXPECT_EQ(grp.g[0]->control(i).announced.load(), 0u) << "rank " << i;
  }
}

// Whether /dev/shm holds the group's name.
bool named(const ShmGroup& g) {
  char path[96];
  std::snprintf(path, sizeof path, "/dev/shm/rina-%d-g-%016llx", g.ownerPid(),
                static_cast<unsigned long long>(g.nameId()));
  return access(path, F_OK) == 0;
}

TEST(ShmGroupTest, SpareSlotsAreNotResidentUntilAGrowGivesThemToAJoiner) {
  constexpr size_t kSlotKb = Group::kSlotBytes / 1024;
  Group grp(0x5e5a, /*spares=*/2);
  for (int r = 0; r < Group::kRanks; ++r) ASSERT_TRUE(grp.g[r]);
  ShmGroup& m0 = *grp.g[0];
  // Resident: the header and control words, and both slots of each of the 3
  // ranks (populated at join); the 2 spares' 4 slots are not.
  const long rss = smapsKbOfMappingAt(m0.slot(0, 0), {"Rss"});
  EXPECT_GE(rss, static_cast<long>(Group::kRanks * 2 * kSlotKb));
  EXPECT_LT(rss, static_cast<long>((Group::kRanks * 2 + 1) * kSlotKb)) << "spare slots resident";
  EXPECT_TRUE(named(m0)) << "a segment with spare slots keeps its name";
  EXPECT_TRUE(m0.offersSpares(2));
  EXPECT_FALSE(m0.offersSpares(3));

  // The members used different numbers of rounds (a call one gave up).
  for (int i = 0; i < 4; ++i) grp.g[0]->nextRound();
  for (int i = 0; i < 9; ++i) grp.g[1]->nextRound();
  for (int i = 0; i < 6; ++i) grp.g[2]->nextRound();
  const uint64_t tag = 0x7a67;
  for (int r = 0; r < Group::kRanks; ++r) grp.g[r]->markForGrow(tag);
  std::unique_ptr<ShmGroup> joiner;
  ASSERT_TRUE(ShmGroup::attachGrown(m0.nameId(), m0.ownerPid(), tag, 3, 4, &joiner).ok());
  for (int r = 0; r < Group::kRanks; ++r) ASSERT_TRUE(grp.g[r]->grow(1, tag).ok());
  // Every member waits for the others and checks copies, joiner included.
  std::vector<std::thread> waits;
  std::vector<ShmGroup*> all = {grp.g[0].get(), grp.g[1].get(), grp.g[2].get(), joiner.get()};
  for (ShmGroup* g : all) {
    waits.emplace_back([g] {
      EXPECT_TRUE(g->waitJoined(deadlineAfterMs(10000), nullptr).ok());
      EXPECT_TRUE(g->checkCopies(deadlineAfterMs(10000), nullptr).ok());
    });
  }
  for (std::thread& t : waits) t.join();
  for (ShmGroup* g : all) {
    EXPECT_EQ(g->ranks(), 4);
    EXPECT_EQ(g->lastRound(), 9u) << "rank " << g->rank();
    EXPECT_EQ(g->copiesWork(), all[0]->copiesWork());
  }
  EXPECT_EQ(joiner->rank(), 3);
  // The joiner's slot is the first spare, right after the members' slots,
  // and the others read what it writes there (and it theirs).
  EXPECT_EQ(m0.slot(3, 0), m0.slot(2, 1) + Group::kSlotBytes);
  std::memcpy(joiner->slot(3, 1), "joined", 7);
  EXPECT_STREQ(grp.g[1]->slot(3, 1), "joined");
  std::memcpy(grp.g[2]->slot(2, 0), "member", 7);
  EXPECT_STREQ(joiner->slot(2, 0), "member");
  EXPECT_EQ(m0.control(3).done.load(), 9u);
  // Now resident on the members too: the joiner's two slots.
  EXPECT_GE(smapsKbOfMappingAt(m0.slot(0, 0), {"Rss"}), static_cast<long>(4 * 2 * kSlotKb));
  EXPECT_TRUE(m0.offersSpares(1));
  EXPECT_FALSE(m0.offersSpares(2));

  // The joiner and other members leave: the name stays; slot 0's holder
  // takes it with it.
  joiner.reset();
  grp.g[1].reset();
  EXPECT_TRUE(named(m0));
  const uint64_t id = m0.nameId();
  const int owner = m0.ownerPid();
  grp.g[0].reset();
  std::unique_ptr<ShmGroup> late;
  EXPECT_FALSE(ShmGroup::attachGrown(id, owner, tag, 3, 4, &late).ok())
      << "the name is still there";
}

// A joiner whose tag no member marked (another grow's id) is refused.
TEST(ShmGroupTest, AJoinerWithAnotherGrowsTagIsRefused) {
  Group grp(0x5e5b, /*spares=*/1);
  for (int r = 0; r < Group::kRanks; ++r) grp.g[r]->markForGrow(0x1111);
  std::unique_ptr<ShmGroup> joiner;
  const Status s =
      ShmGroup::attachGrown(grp.g[0]->nameId(), grp.g[0]->ownerPid(), 0x2222, 3, 4, &joiner);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("no member of the grow marked"), std::string::npos) << s.message();
}

// A rank that never maps the segment: the others' wait ends at its deadline
// naming how many did, or at once when the call is aborted.
TEST(ShmGroupTest, WaitingForARankThatNeverJoinsTimesOutOrAborts) {
  std::unique_ptr<ShmGroup> g;
  const uint64_t commId = uint64_t{0x5e5c} << 32 | static_cast<uint64_t>(getpid());
  ASSERT_TRUE(ShmGroup::join(commId, static_cast<int>(getpid()), 0, 2, 0, Group::kSlotBytes,
                             deadlineAfterMs(10000), &g)
                  .ok());
  Status s = g->waitJoined(deadlineAfterMs(150), nullptr);
  EXPECT_EQ(s.code(), rinaTimeout);
  EXPECT_NE(s.message().find("only 1 of 2 ranks on this host mapped"), std::string::npos)
      << s.message();
  const std::atomic<bool> abort{true};
  s = g->waitJoined(deadlineAfterMs(10000), &abort);
  EXPECT_EQ(s.code(), rinaAborted) << s.message();
}

// A peer that never says whether it can copy: the check ends at its
// deadline naming the first rank that did not answer.
TEST(ShmGroupTest, ACopyCheckThatNoPeerAnswersTimesOutNamingIt) {
  Group grp(0x5e5d);
  const Status s = grp.g[0]->checkCopies(deadlineAfterMs(150), nullptr);
  EXPECT_EQ(s.code(), rinaTimeout);
  EXPECT_NE(s.message().find("rank 1 never said whether it can copy"), std::string::npos)
      << s.message();
}

// A grow whose joiner never attaches: the members' wait names it.
TEST(ShmGroupTest, AGrowsJoinerThatNeverAttachesIsNamed) {
  Group grp(0x5e5e, /*spares=*/1);
  const uint64_t tag = 0x7a68;
  for (int r = 0; r < Group::kRanks; ++r) grp.g[r]->markForGrow(tag);
  for (int r = 0; r < Group::kRanks; ++r) ASSERT_TRUE(grp.g[r]->grow(1, tag).ok());
  const Status s = grp.g[1]->waitJoined(deadlineAfterMs(150), nullptr);
  EXPECT_EQ(s.code(), rinaTimeout);
  EXPECT_NE(s.message().find("rank 3 never mapped the grown host segment"), std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace rina::transport
