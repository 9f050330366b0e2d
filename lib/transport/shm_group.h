// One shared-memory segment for all ranks of a communicator that live on one
// host, for collectives that need no pairwise stream: every rank posts its
// buffer (or a chunk of it) into a slot of its own, then reads everybody's
// (the one-shot and two-shot allreduce, lib/algo/flat/host_allreduce.cc).
// Each use of the slots is a round, numbered alike on every rank
// (nextRound); each rank has two slots, used by alternate rounds, so a rank
// may post round k+1 while a slower peer still reads round k. A slot's
// `posted` word (and, for a two-shot round, its `reduced` word: this
// rank's share of the sum is in the slot) is stored (release) after its
// bytes and is the futex a reader sleeps on; `done` says which round a
// rank last finished reading, so a writer never overwrites a slot still
// being read.
//
// Set-up needs no messages: every rank tries to create the segment by a
// name made of the communicator id (fresh per communicator) and the pid of
// the communicator's rank 0 (every rank is on this host); one wins and
// initialises it, the others map it once it has its full size and mark.
//
// The segment has room for more ranks than it starts with (spare slots,
// RINA_SHM_SPARE_SLOTS), which a grow on this host fills without a new
// segment (grow, attachGrown). Their pages are neither populated nor
// touched until a joiner takes them: they cost address space, not memory.
// With spares the name stays while the group lives, so a joiner can open
// it; the rank in slot 0 (rank 0 at creation, whose pid the name holds)
// removes it when it leaves, and a grow offers the segment only while that
// rank is a member. Without spares the last rank to join removes the name.
// A rank that leaves before everyone joined removes it too, and a name left
// by ranks that were all killed, or whose slot-0 rank was, is removed by
// the next set-up on the host (removeStaleSegments: that pid is gone).
#ifndef RINA_LIB_TRANSPORT_SHM_GROUP_H_
#define RINA_LIB_TRANSPORT_SHM_GROUP_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/shared_memory.h"
#include "core/socket.h"
#include "core/status.h"

namespace rina::transport {

// What a rank says about the call it posted, checked by every reader.
struct ShmGroupCall {
  uint64_t seq;
  uint64_t count;
  uint8_t datatype;
  uint8_t op;
  uint8_t collective;
  uint8_t pad;
  // The CPU the rank posted from: a core-mate waiting for the round's
  // posts spins rather than yields while no rank yet to post is on its CPU.
  uint16_t cpu;
  uint8_t pad2[2];
};

// Where an all-to-all round's blocks are read from when the sender's
// buffer lies in memory from rinaMemAlloc (core/shared_memory.h):
// its allocation, and its send buffer's offset in it and address (for a
// reader that may not map it but may copy from the process). serial 0:
// the blocks are in the slot.
struct ShmGroupMappedSend {
  uint64_t serial;
  uint64_t offset;
  uint64_t address;
  int32_t fd;
  uint32_t pad;
};

// One rank's control words, on cache lines of their own.
struct ShmGroupRank {
  alignas(64) std::atomic<uint32_t> posted[2];  // the round the slot's input is for
  std::atomic<uint32_t> reduced[2];             // the round whose share of the sum it holds
  ShmGroupCall call[2];
  // Written with call[which], before posted[which].
  alignas(64) ShmGroupMappedSend mapped[2];
  alignas(64) std::atomic<uint32_t> done;  // the last round fully read
  // Raised while this rank sleeps on a futex. Every post reads every
  // peer's: on a line of its own it stays in the poster's cache, where next
  // to `done` (written every call) each read missed.
  alignas(64) std::atomic<uint32_t> sleeping;
  // The allreduce this rank is in, whatever carries it: seq << 8 | the
  // algorithm that runs it (algo::Algorithm), so a rank waiting on a peer
  // that runs another schedule sees it (0: none yet).
  alignas(64) std::atomic<uint64_t> announced;
  // Written once, before the rank counts itself in: its process, and a
  // word of its memory the others copy from and into to learn whether the
  // kernel lets them (checkCopies: 1 it does for every peer, 2 not).
  int32_t pid;
  uint64_t probeAddr;
  std::atomic<uint32_t> copyCheck;  // epoch << 2 | 1 or 2 (0: not yet)
  // Raised once the rank has written pid and probeAddr.
  std::atomic<uint32_t> present;
  // Written by a member of a group growing on this host before it meets the
  // joiners (ShmGroup::markForGrow): the grow's tag (the unique id's
  // communicator id), its rank, its last round, the slots used so far and
  // the group's epoch, from which every member and joiner derives the grown
  // group alike.
  alignas(64) std::atomic<uint64_t> growTag;
  int32_t growRank;
  uint32_t growRound;
  uint32_t growSlotsUsed;
  uint32_t growEpoch;
  // Notices (a revoke, a shrink's proposal) sent to this rank's listening
  // socket, counted by their senders before they connect: while it equals
  // the notices this rank took, a call need not look at the socket.
  alignas(64) std::atomic<uint32_t> noticesSent;
};

class ShmGroup {
 public:
  // Joins (creating when first) the group of `ranks` ranks named by
  // commId and ownerPid (rank 0's pid), with room for spareSlots more
  // (every rank passes the same); this rank is `rank` (0 .. ranks-1); slots
  // of slotBytes (rounded up to 64). Waits until the segment is mapped, not
  // for the other ranks to join (waitJoined).
  static Status join(uint64_t commId, int ownerPid, int rank, int ranks, int spareSlots,
                     size_t slotBytes, Deadline deadline, std::unique_ptr<ShmGroup>* out);
  // A joiner of a grow that keeps the segment (the members offered it:
  // offersSpares, markForGrow with `tag`): maps the segment named by commId
  // and ownerPid and takes the rank `rank` of `ranks` in a spare slot, as
  // grow() numbers it on the members. Then waitJoined and checkCopies.
  static Status attachGrown(uint64_t commId, int ownerPid, uint64_t tag, int rank, int ranks,
                            std::unique_ptr<ShmGroup>* out);
  // What names the segment (join's commId and ownerPid).
  uint64_t nameId() const { return nameId_; }
  int ownerPid() const { return ownerPid_; }
  // Whether a grow by nNew joiners on this host can keep the segment: it
  // has that many spare slots never used, and its name is still there (the
  // rank in slot 0 is a member). The same on every member.
  bool offersSpares(int nNew) const;
  // Before meeting the joiners (offersSpares was true): this rank's marks
  // for the grown group, under the grow's tag.
  void markForGrow(uint64_t tag);
  // After the meeting, on every member that called markForGrow: the group
  // grows by nNew ranks (numbered after the members, in spare slots in
  // order). Rounds go on above every member's last one. Then waitJoined
  // and checkCopies, as the joiners do.
  Status grow(int nNew, uint64_t tag);
  ~ShmGroup();
  ShmGroup(const ShmGroup&) = delete;
  ShmGroup& operator=(const ShmGroup&) = delete;

  // Until every rank has mapped the segment (then, without spare slots, the
  // name is gone).
  Status waitJoined(Deadline deadline, const std::atomic<bool>* abort);
  // After waitJoined: copies a word out of and back into every peer's memory
  // (transport/cma.h) and waits until every rank has said whether that
  // worked. Then copiesWork() is the same on every rank.
  Status checkCopies(Deadline deadline, const std::atomic<bool>* abort);
  // Every rank can copy straight between its memory and every peer's.
  bool copiesWork() const;

  int rank() const { return rank_; }
  int ranks() const { return ranks_; }
  size_t slotBytes() const { return slotBytes_; }
  ShmGroupRank& control(int r) const { return controls_[slotOf_[r]]; }
  char* slot(int r, int which) const {
    return data_ + (static_cast<size_t>(slotOf_[r]) * 2 + static_cast<size_t>(which)) * slotBytes_;
  }
  // The last round this rank used (0: none yet).
  uint32_t lastRound() const { return rounds_; }
  // A shrink keeps the segment: members[i], a rank of this group, becomes
  // rank i (this rank: `rank`), in the slots it had, and the others' slots
  // go unused. Every member calls it between the same two collectives with
  // the same base, at least the lastRound() of every member: rounds go on
  // from there, so no word a member left from an earlier round (an aborted
  // one too) reads as a round of the renumbered group.
  void renumber(const std::vector<int>& members, int rank, uint32_t base);
  // The number of this rank's next round (every rank counts alike, as
  // every rank runs the same collectives).
  uint32_t nextRound() { return ++rounds_; }
  // Publishes this rank's slot `which` as round `round`'s input (its bytes
  // and call record already written) and wakes peers that sleep.
  void post(int which, uint32_t round);
  // Publishes this rank's share of round `round`'s sum in slot `which`.
  void postReduced(int which, uint32_t round);
  // Stores value in a word of the segment and wakes the ranks sleeping on
  // it (a word in a slot: a block copied for a peer).
  void publish(std::atomic<uint32_t>* word, uint32_t value);
  // This rank has read every slot of round `round`.
  void finish(uint32_t round);
  // A round every peer is known to have finished reading, seen by this
  // rank rather than read from the peers' done words (the host allreduce
  // keeps it). Forgotten (0) when the group is renumbered or grows.
  uint32_t peersFinished() const { return peersFinished_; }
  void setPeersFinished(uint32_t round) { peersFinished_ = round; }
  // Before a notice goes to rank r's listening socket (counted first, so r
  // looks until the notice is there).
  void countNoticeFor(int r) { control(r).noticesSent.fetch_add(1); }
  // The notices sent to this rank so far.
  uint32_t noticesSentHere() const { return control(rank_).noticesSent.load(); }
  // Before a call of `bytes` per slot: the first access, through this
  // rank's mapping, to every page of both slots of every rank that such a
  // call uses (see touchPages), once per page.
  void prepare(size_t bytes) {
    if (bytes > prepared_) touchPages(bytes);
  }
  // The peers' rinaMemAlloc memory this rank has mapped.
  PeerMappings& peerMappings() { return peerMappings_; }

 private:
  ShmGroup() = default;
  // The steps of join, on the segment's descriptor: map it, then its
  // creator writes the header or the others wait for it and check it, then
  // this rank counts itself in.
  Status map(const Fd& fd, size_t populated);
  // Maps [from, to) of the segment again with its pages populated.
  void populate(size_t from, size_t to);
  // Reads the members' grow marks under tag: their slots by rank, the
  // round the grown group goes on from, the slots used before it and the
  // epoch before it.
  Status readGrowMarks(uint64_t tag, std::vector<int>* slots, uint32_t* base, uint32_t* slotsUsed,
                       uint32_t* epoch) const;
  // Takes slots [slotsUsed_, slotsUsed_ + n) for the ranks after the members.
  void takeSpares(const std::vector<int>& memberSlots, int n, uint32_t base, uint32_t epoch);
  void initialise();
  Status waitInitialised(Deadline deadline);
  void markJoined();
  void wakeSleepers(std::atomic<uint32_t>* word);
  void touchPages(size_t bytes);

  void* base_ = nullptr;
  size_t size_ = 0;
  std::string name_;
  uint64_t nameId_ = 0;
  int ownerPid_ = 0;
  bool linked_ = false;     // the name is this rank's to remove when it leaves
  bool keepsName_ = false;  // spare slots: the name stays while the group lives
  int slots_ = 0;           // ranks the segment has room for
  int slotsUsed_ = 0;       // slots ever given to a rank (a shrink leaves holes)
  uint32_t epoch_ = 0;      // grows that kept the segment
  int rank_ = 0;
  int ranks_ = 0;
  size_t slotBytes_ = 0;
  size_t prepared_ = 0;  // prepare() has readied [0, prepared_) of every slot
  uint32_t rounds_ = 0;
  uint32_t peersFinished_ = 0;
  uint64_t probe_ = 0;  // the word peers copy (ShmGroupRank::probeAddr)
  ShmGroupRank* controls_ = nullptr;
  std::vector<int> slotOf_;  // rank -> its control words and slots in the segment
  char* data_ = nullptr;
  PeerMappings peerMappings_;
};

// Whether a - b >= 0 for round numbers that wrap at 2^32.
inline bool seqAtLeast(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) >= 0; }

}  // namespace rina::transport

#endif  // RINA_LIB_TRANSPORT_SHM_GROUP_H_
