#include "transport/shm_group.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <memory>

#include "transport/cma.h"
#include "transport/shm_connection.h"
#include "transport/wait_set.h"

namespace rina::transport {
namespace {

constexpr uint32_t kGroupMagic = 0x52534732;  // "RSG2"

struct GroupHeader {
  std::atomic<uint32_t> magic;  // stored last by the creator
  uint32_t ranks;               // at creation
  uint32_t slots;               // ranks and spare slots
  uint64_t slotBytes;
  alignas(64) std::atomic<uint32_t> joined;
  std::atomic<uint32_t> joinSleeping;
};

size_t roundUp(size_t x, size_t a) { return (x + a - 1) / a * a; }
size_t controlsOffset() { return roundUp(sizeof(GroupHeader), 64); }
size_t dataOffset(int ranks) {
  return roundUp(controlsOffset() + sizeof(ShmGroupRank) * static_cast<size_t>(ranks), 4096);
}
// The bytes up to the end of the first `used` slots of a segment of `slots`.
size_t usedBytes(int slots, int used, size_t slotBytes) {
  return dataOffset(slots) + static_cast<size_t>(used) * 2 * slotBytes;
}
size_t totalBytes(int slots, size_t slotBytes) { return usedBytes(slots, slots, slotBytes); }

std::string segmentName(uint64_t commId, int ownerPid) {
  char name[64];
  std::snprintf(name, sizeof(name), "/rina-%d-g-%016" PRIx64, ownerPid, commId);
  return name;
}

}  // namespace

namespace {

// Creates the segment's name (*creator) or opens the one another rank
// created; one that goes away in between is tried again until deadline.
Status openOrCreate(const char* name, int rank, Deadline deadline, Fd* fd, bool* creator) {
  for (;;) {
    int f = shm_open(name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    if (f >= 0) {
      *creator = true;
      *fd = Fd(f);
      return {};
    }
    if (errno != EEXIST) return systemErrorf(errno, "rank %d: shm_open(%s)", rank, name);
    f = shm_open(name, O_RDWR | O_CLOEXEC, 0600);
    if (f >= 0) {
      *fd = Fd(f);
      return {};
    }
    if (errno != ENOENT) return systemErrorf(errno, "rank %d: shm_open(%s)", rank, name);
    if (Clock::now() >= deadline) {
      return errorf(rinaTimeout, "rank %d: the host segment %s came and went", rank, name);
    }
  }
}

// The creator sizes the segment right after creating it; the others wait
// for that (set-up only, bounded by the communicator's set-up deadline).
Status waitSized(const Fd& fd, const char* name, int rank, size_t size, Deadline deadline) {
  for (;;) {
    struct stat st {};
    if (fstat(fd.get(), &st) != 0) return systemErrorf(errno, "rank %d: fstat(%s)", rank, name);
    if (static_cast<size_t>(st.st_size) == size) return {};
    if (st.st_size != 0) {
      return errorf(rinaInvalidUsage,
                    "rank %d: the host segment %s has %lld bytes, this rank expects %zu "
                    "(RINA_SMALL_MSG_BYTES and RINA_SHM_SPARE_SLOTS must be equal on every "
                    "rank)",
                    rank, name, static_cast<long long>(st.st_size), size);
    }
    if (Clock::now() >= deadline) {
      return errorf(rinaTimeout, "rank %d: the host segment %s was never sized", rank, name);
    }
    timespec nap{0, 100000};
    nanosleep(&nap, nullptr);
  }
}

// Sleeps on *word until done(its value), in slices of at most 100 ms so that
// the abort flag and the deadline are seen; at the deadline the error is
// timeoutError(the last value seen).
template <class Done, class TimeoutError>
Status waitForWord(std::atomic<uint32_t>* word, std::atomic<uint32_t>* sleeping, int rank,
                   Deadline deadline, const std::atomic<bool>* abort, Done done,
                   TimeoutError timeoutError) {
  for (;;) {
    const uint32_t seen = word->load();
    if (done(seen)) return {};
    if (abort && abort->load()) return errorf(rinaAborted, "rank %d: aborted", rank);
    const int64_t left = msUntil(deadline);
    if (left <= 0) return timeoutError(seen);
    WaitSet ws;
    ws.addFutex(word, seen, sleeping);
    ws.wait(static_cast<int>(std::min<int64_t>(left, 100)));
  }
}

}  // namespace

Status ShmGroup::join(uint64_t commId, int ownerPid, int rank, int ranks, int spareSlots,
                      size_t slotBytes, Deadline deadline, std::unique_ptr<ShmGroup>* out) {
  if (ranks < 1 || rank < 0 || rank >= ranks || spareSlots < 0) {
    return errorf(rinaInternalError, "shm group: rank %d of %d, %d spare slots", rank, ranks,
                  spareSlots);
  }
  std::unique_ptr<ShmGroup> g(new ShmGroup());
  g->rank_ = rank;
  g->ranks_ = ranks;
  g->slots_ = ranks + spareSlots;
  g->slotsUsed_ = ranks;
  g->keepsName_ = spareSlots > 0;
  g->slotBytes_ = roundUp(slotBytes, 64);
  g->size_ = totalBytes(g->slots_, g->slotBytes_);
  for (int r = 0; r < ranks; ++r) g->slotOf_.push_back(r);
  g->nameId_ = commId;
  g->ownerPid_ = ownerPid;
  g->name_ = segmentName(commId, ownerPid);
  const char* name = g->name_.c_str();

  removeStaleSegments();
  bool creator = false;
  Fd fd;
  RINA_TRY(openOrCreate(name, rank, deadline, &fd, &creator));
  // Until every rank has joined: a rank that leaves before (a failed
  // set-up) removes the name, so a crash of the others leaves nothing.
  g->linked_ = true;
  if (creator) {
    if (ftruncate(fd.get(), static_cast<off_t>(g->size_)) != 0) {
      return systemErrorf(errno, "rank %d: ftruncate(%s, %zu) (is /dev/shm full?)", rank, name,
                          g->size_);
    }
  } else {
    RINA_TRY(waitSized(fd, name, rank, g->size_, deadline));
  }
  RINA_TRY(g->map(fd, usedBytes(g->slots_, ranks, g->slotBytes_)));
  if (creator) {
    g->initialise();
  } else {
    RINA_TRY(g->waitInitialised(deadline));
  }
  g->markJoined();
  *out = std::move(g);
  return {};
}

Status ShmGroup::map(const Fd& fd, size_t populated) {
  base_ = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (base_ == MAP_FAILED) {
    base_ = nullptr;
    return systemErrorf(errno, "rank %d: mmap(%s)", rank_, name_.c_str());
  }
  controls_ = reinterpret_cast<ShmGroupRank*>(static_cast<char*>(base_) + controlsOffset());
  data_ = static_cast<char*>(base_) + dataOffset(slots_);
  populate(0, populated);
  return {};
}

void ShmGroup::populate(size_t from, size_t to) {
  // Every page of the slots in use (a few hundred KiB) is allocated and
  // mapped here, during set-up, instead of on first touch: the two slots of
  // a rank are first written by calls 1 and 2, and a page fault there kept
  // the faulting rank's peers waiting (asleep, by then) in the first calls
  // of a fresh communicator. prepare() does the rest. Spare slots are left
  // alone until a joiner takes them. Where the kernel cannot populate (older
  // than 5.14), pages come at first touch: slower first calls, nothing else.
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  from = from / page * page;
  to = std::min(roundUp(to, page), size_);
  if (to <= from) return;
  (void)madvise(static_cast<char*>(base_) + from, to - from, MADV_POPULATE_READ);
}

void ShmGroup::initialise() {
  // ftruncate gave zeroes: every posted / done word reads as call 0, and
  // calls are numbered from 1.
  auto* h = static_cast<GroupHeader*>(base_);
  h->ranks = static_cast<uint32_t>(ranks_);
  h->slots = static_cast<uint32_t>(slots_);
  h->slotBytes = slotBytes_;
  h->magic.store(kGroupMagic, std::memory_order_release);
}

Status ShmGroup::waitInitialised(Deadline deadline) {
  auto* h = static_cast<GroupHeader*>(base_);
  while (h->magic.load(std::memory_order_acquire) != kGroupMagic) {
    if (Clock::now() >= deadline) {
      return errorf(rinaTimeout, "rank %d: the host segment %s was never initialised", rank_,
                    name_.c_str());
    }
    timespec nap{0, 100000};
    nanosleep(&nap, nullptr);
  }
  if (h->ranks != static_cast<uint32_t>(ranks_) || h->slots != static_cast<uint32_t>(slots_) ||
      h->slotBytes != slotBytes_) {
    return errorf(rinaInvalidUsage,
                  "rank %d: the host segment %s is for %u ranks (%u slots) of %llu-byte slots, "
                  "this rank expects %d (%d) of %zu",
                  rank_, name_.c_str(), h->ranks, h->slots,
                  static_cast<unsigned long long>(h->slotBytes), ranks_, slots_, slotBytes_);
  }
  return {};
}

void ShmGroup::markJoined() {
  ShmGroupRank& me = control(rank_);
  me.pid = static_cast<int32_t>(getpid());
  me.probeAddr = reinterpret_cast<uintptr_t>(&probe_);
  publish(&me.present, 1);
  if (epoch_ > 0) return;  // a joiner of a grow: the members wait on `present`
  auto* h = static_cast<GroupHeader*>(base_);
  if (h->joined.fetch_add(1) + 1 == static_cast<uint32_t>(ranks_) && !keepsName_) {
    shm_unlink(name_.c_str());  // everyone has it mapped
    linked_ = false;
  }
  futexWake(&h->joined);
}

Status ShmGroup::waitJoined(Deadline deadline, const std::atomic<bool>* abort) {
  if (epoch_ > 0) {
    // A grown group: the joiners' spare slots were never used, so a rank
    // is there once its slot says so.
    for (int r = 0; r < ranks_; ++r) {
      RINA_TRY(waitForWord(
          &control(r).present, &control(rank_).sleeping, rank_, deadline, abort,
          [](uint32_t present) { return present != 0; },
          [&](uint32_t) {
            return errorf(rinaTimeout, "rank %d: rank %d never mapped the grown host segment %s",
                          rank_, r, name_.c_str());
          }));
    }
    return {};
  }
  auto* h = static_cast<GroupHeader*>(base_);
  RINA_TRY(waitForWord(
      &h->joined, &h->joinSleeping, rank_, deadline, abort,
      [&](uint32_t joined) { return joined >= static_cast<uint32_t>(ranks_); },
      [&](uint32_t joined) {
        return errorf(rinaTimeout, "rank %d: only %u of %d ranks on this host mapped %s", rank_,
                      joined, ranks_, name_.c_str());
      }));
  // The last rank to join removed the name, or (spare slots) the rank in
  // slot 0 removes it when it leaves.
  linked_ = false;
  return {};
}

Status ShmGroup::checkCopies(Deadline deadline, const std::atomic<bool>* abort) {
  bool works = true;
  for (int r = 0; r < ranks_ && works; ++r) {
    if (r == rank_) continue;
    const ShmGroupRank& peer = control(r);
    uint64_t word = 0;
    works = readProcessMemory(peer.pid, peer.probeAddr, &word, sizeof word).ok() &&
            writeProcessMemory(peer.pid, &word, peer.probeAddr, sizeof word).ok();
  }
  // Tagged with the epoch: a grown group checks again, with its joiners.
  publish(&control(rank_).copyCheck, epoch_ << 2 | (works ? 1 : 2));
  for (int r = 0; r < ranks_; ++r) {
    RINA_TRY(waitForWord(
        &control(r).copyCheck, &control(rank_).sleeping, rank_, deadline, abort,
        [&](uint32_t said) { return said >> 2 == epoch_ && (said & 3) != 0; },
        [&](uint32_t) {
          return errorf(rinaTimeout,
                        "rank %d: rank %d never said whether it can copy between processes (%s)",
                        rank_, r, name_.c_str());
        }));
  }
  return {};
}

bool ShmGroup::copiesWork() const {
  for (int r = 0; r < ranks_; ++r) {
    if ((control(r).copyCheck.load(std::memory_order_relaxed) & 3) != 1) return false;
  }
  return true;
}

void ShmGroup::touchPages(size_t bytes) {
  // A populated page can still cost its first access: where the hypervisor
  // shadows the guest's page tables (as on the machines this was measured
  // on), the first read of a page through a mapping traps (~2 us) and the
  // first write traps again (~10 us), with no page fault the guest counts.
  // Calls alternate between a rank's two slots, so without this a 64 KiB
  // call paid it twice: call 0 in one slot, call 1 in the other (~0.2 ms
  // to copy into its slot, 20-70 us to read each peer's), and call 1's
  // peers went to sleep meanwhile. Here both slots are readied at once, up
  // to the size of the call: this rank's own by an atomic add of 0 per page
  // (a write that keeps the bytes, as a peer may still be reading the call
  // the slot carried last), the others' by a read.
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t from = prepared_;
  const size_t to = std::min(bytes, slotBytes_);
  if (to <= from) return;
  for (int r = 0; r < ranks_; ++r) {
    auto touch = [mine = r == rank_](char* byte) {
      std::atomic_ref<char> b(*byte);
      if (mine) {
        b.fetch_add(0, std::memory_order_relaxed);
      } else {
        (void)b.load(std::memory_order_relaxed);
      }
    };
    for (int which = 0; which < 2; ++which) {
      char* s = slot(r, which);
      for (size_t off = from; off < to; off += page) touch(s + off);
      touch(s + to - 1);  // the last page, where slots are not page-aligned
    }
  }
  prepared_ = to;
}

ShmGroup::~ShmGroup() {
  if (linked_ || (keepsName_ && !slotOf_.empty() && slotOf_[rank_] == 0)) {
    shm_unlink(name_.c_str());
  }
  if (base_) munmap(base_, size_);
}

void ShmGroup::wakeSleepers(std::atomic<uint32_t>* word) {
  // seq_cst store of the word, then seq_cst loads of the flags: a sleeper
  // raises its flag and then re-reads the word (WaitSet), so one of the
  // two sides sees the other.
  for (int r = 0; r < ranks_; ++r) {
    if (r != rank_ && control(r).sleeping.load()) {
      futexWake(word);
      return;
    }
  }
}

void ShmGroup::post(int which, uint32_t round) { publish(&control(rank_).posted[which], round); }

void ShmGroup::postReduced(int which, uint32_t round) {
  publish(&control(rank_).reduced[which], round);
}

void ShmGroup::publish(std::atomic<uint32_t>* word, uint32_t value) {
  word->store(value);
  wakeSleepers(word);
}

void ShmGroup::renumber(const std::vector<int>& members, int rank, uint32_t base) {
  std::vector<int> slots;
  for (int m : members) slots.push_back(slotOf_[m]);
  slotOf_ = std::move(slots);
  rank_ = rank;
  ranks_ = static_cast<int>(members.size());
  rounds_ = base;
  peersFinished_ = 0;
  peerMappings_.clear();  // cached by rank: a rank may now be another process
  // The renumbered group's collectives count from 0 again.
  control(rank_).announced.store(0);
  // Peers reusing a slot wait for this rank's done to reach the round the
  // slot last carried, which is at most base.
  publish(&control(rank_).done, base);
}

void ShmGroup::finish(uint32_t round) { publish(&control(rank_).done, round); }

bool ShmGroup::offersSpares(int nNew) const {
  return keepsName_ && nNew >= 1 && slotsUsed_ + nNew <= slots_ &&
         std::find(slotOf_.begin(), slotOf_.end(), 0) != slotOf_.end();
}

void ShmGroup::markForGrow(uint64_t tag) {
  ShmGroupRank& me = control(rank_);
  me.growRank = rank_;
  me.growRound = rounds_;
  me.growSlotsUsed = static_cast<uint32_t>(slotsUsed_);
  me.growEpoch = epoch_;
  me.growTag.store(tag, std::memory_order_release);
}

Status ShmGroup::readGrowMarks(uint64_t tag, std::vector<int>* slots, uint32_t* base,
                               uint32_t* slotsUsed, uint32_t* epoch) const {
  // Every member marked its slot before it met the joiners, and the
  // meeting ended only after every member came: all marks are there.
  std::vector<int> bySlot(static_cast<size_t>(slots_), -1);
  int members = 0;
  for (int i = 0; i < slots_; ++i) {
    const ShmGroupRank& c = controls_[i];
    if (c.growTag.load(std::memory_order_acquire) != tag) continue;
    if (c.growRank < 0 || c.growRank >= slots_) {
      return errorf(rinaRemoteError, "rank %d: slot %d of the host segment %s holds rank %d", rank_,
                    i, name_.c_str(), c.growRank);
    }
    bySlot[i] = c.growRank;
    ++members;
  }
  slots->assign(static_cast<size_t>(members), -1);
  for (int i = 0; i < slots_; ++i) {
    const int r = bySlot[i];
    if (r < 0) continue;
    if (r >= members || (*slots)[r] >= 0) {
      return errorf(rinaRemoteError,
                    "rank %d: the host segment %s holds the marks of %d members, with rank %d "
                    "out of order or twice",
                    rank_, name_.c_str(), members, r);
    }
    (*slots)[r] = i;
  }
  if (members == 0) {
    return errorf(rinaRemoteError, "rank %d: no member of the grow marked the host segment %s",
                  rank_, name_.c_str());
  }
  const ShmGroupRank& first = controls_[(*slots)[0]];
  *slotsUsed = first.growSlotsUsed;
  *epoch = first.growEpoch;
  *base = first.growRound;
  for (int s : *slots) {
    if (seqAtLeast(controls_[s].growRound, *base)) *base = controls_[s].growRound;
  }
  return {};
}

void ShmGroup::takeSpares(const std::vector<int>& memberSlots, int n, uint32_t base,
                          uint32_t epoch) {
  slotOf_ = memberSlots;
  for (int j = 0; j < n; ++j) slotOf_.push_back(slotsUsed_ + j);
  const size_t from = usedBytes(slots_, slotsUsed_, slotBytes_);
  slotsUsed_ += n;
  populate(from, usedBytes(slots_, slotsUsed_, slotBytes_));
  ranks_ = static_cast<int>(slotOf_.size());
  epoch_ = epoch + 1;
  rounds_ = base;
  peersFinished_ = 0;
  prepared_ = 0;
  peerMappings_.clear();
  control(rank_).announced.store(0);
  publish(&control(rank_).done, base);
}

Status ShmGroup::grow(int nNew, uint64_t tag) {
  std::vector<int> members;
  uint32_t base = 0, used = 0, epoch = 0;
  RINA_TRY(readGrowMarks(tag, &members, &base, &used, &epoch));
  if (members != slotOf_ || used != static_cast<uint32_t>(slotsUsed_) || epoch != epoch_) {
    return errorf(rinaInternalError,
                  "rank %d: the grow marks in the host segment %s are not this group's (%zu "
                  "members, %u slots used, epoch %u; here %d, %d, %u)",
                  rank_, name_.c_str(), members.size(), used, epoch, ranks_, slotsUsed_, epoch_);
  }
  takeSpares(members, nNew, base, epoch);
  return {};
}

Status ShmGroup::attachGrown(uint64_t commId, int ownerPid, uint64_t tag, int rank, int ranks,
                             std::unique_ptr<ShmGroup>* out) {
  std::unique_ptr<ShmGroup> g(new ShmGroup());
  g->rank_ = rank;
  g->nameId_ = commId;
  g->ownerPid_ = ownerPid;
  g->keepsName_ = true;
  g->name_ = segmentName(commId, ownerPid);
  const char* name = g->name_.c_str();
  const int f = shm_open(name, O_RDWR | O_CLOEXEC, 0600);
  if (f < 0) {
    return systemErrorf(errno, "rank %d: shm_open(%s), the host segment the grow keeps", rank,
                        name);
  }
  Fd fd(f);
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) return systemErrorf(errno, "rank %d: fstat(%s)", rank, name);
  g->size_ = static_cast<size_t>(st.st_size);
  if (g->size_ < controlsOffset()) {
    return errorf(rinaRemoteError, "rank %d: the host segment %s has only %zu bytes", rank, name,
                  g->size_);
  }
  auto* h = static_cast<const GroupHeader*>(
      mmap(nullptr, g->size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0));
  if (h == MAP_FAILED) return systemErrorf(errno, "rank %d: mmap(%s)", rank, name);
  g->base_ = const_cast<GroupHeader*>(h);
  g->slots_ = static_cast<int>(h->slots);
  g->slotBytes_ = h->slotBytes;
  if (h->magic.load(std::memory_order_acquire) != kGroupMagic || g->slots_ < 1 ||
      g->slotBytes_ == 0 || g->size_ != totalBytes(g->slots_, g->slotBytes_)) {
    return errorf(rinaRemoteError,
                  "rank %d: the host segment %s (%zu bytes) is not a host group of this version",
                  rank, name, g->size_);
  }
  g->controls_ = reinterpret_cast<ShmGroupRank*>(static_cast<char*>(g->base_) + controlsOffset());
  g->data_ = static_cast<char*>(g->base_) + dataOffset(g->slots_);
  std::vector<int> members;
  uint32_t base = 0, used = 0, epoch = 0;
  RINA_TRY(g->readGrowMarks(tag, &members, &base, &used, &epoch));
  const int joiners = ranks - static_cast<int>(members.size());
  if (rank < static_cast<int>(members.size()) || joiners < 1 ||
      static_cast<int>(used) + joiners > g->slots_) {
    return errorf(rinaRemoteError,
                  "rank %d of %d: the host segment %s holds %zu members, %u of %d slots used: no "
                  "spare slot for this joiner",
                  rank, ranks, name, members.size(), used, g->slots_);
  }
  g->slotsUsed_ = static_cast<int>(used);
  g->populate(0, usedBytes(g->slots_, g->slotsUsed_, g->slotBytes_));
  g->takeSpares(members, joiners, base, epoch);
  g->markJoined();
  *out = std::move(g);
  return {};
}

}  // namespace rina::transport
