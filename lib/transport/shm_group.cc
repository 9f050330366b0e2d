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

constexpr uint32_t kGroupMagic = 0x52534731;  // "RSG1"

struct GroupHeader {
  std::atomic<uint32_t> magic;  // stored last by the creator
  uint32_t ranks;
  uint64_t slotBytes;
  alignas(64) std::atomic<uint32_t> joined;
  std::atomic<uint32_t> joinSleeping;
};

size_t roundUp(size_t x, size_t a) { return (x + a - 1) / a * a; }
size_t controlsOffset() { return roundUp(sizeof(GroupHeader), 64); }
size_t dataOffset(int ranks) {
  return roundUp(controlsOffset() + sizeof(ShmGroupRank) * static_cast<size_t>(ranks), 4096);
}
size_t totalBytes(int ranks, size_t slotBytes) {
  return dataOffset(ranks) + static_cast<size_t>(ranks) * 2 * slotBytes;
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
                    "(RINA_SMALL_MSG_BYTES must be equal on every rank)",
                    rank, name, static_cast<long long>(st.st_size), size);
    }
    if (Clock::now() >= deadline) {
      return errorf(rinaTimeout, "rank %d: the host segment %s was never sized", rank, name);
    }
    timespec nap{0, 100000};
    nanosleep(&nap, nullptr);
  }
}

}  // namespace

Status ShmGroup::join(uint64_t commId, int ownerPid, int rank, int ranks, size_t slotBytes,
                      Deadline deadline, std::unique_ptr<ShmGroup>* out) {
  if (ranks < 1 || rank < 0 || rank >= ranks) {
    return errorf(rinaInternalError, "shm group: rank %d of %d", rank, ranks);
  }
  std::unique_ptr<ShmGroup> g(new ShmGroup());
  g->rank_ = rank;
  g->ranks_ = ranks;
  g->slotBytes_ = roundUp(slotBytes, 64);
  g->size_ = totalBytes(ranks, g->slotBytes_);
  for (int r = 0; r < ranks; ++r) g->slotOf_.push_back(r);
  char name[64];
  std::snprintf(name, sizeof(name), "/rina-%d-g-%016" PRIx64, ownerPid, commId);
  g->name_ = name;

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
  RINA_TRY(g->map(fd));
  if (creator) {
    g->initialise();
  } else {
    RINA_TRY(g->waitInitialised(deadline));
  }
  g->markJoined();
  *out = std::move(g);
  return {};
}

Status ShmGroup::map(const Fd& fd) {
  // MAP_POPULATE: every page of the segment (a few hundred KiB) is
  // allocated and mapped here, during set-up, instead of on first touch:
  // the two slots of a rank are first written by calls 1 and 2, and a page
  // fault there kept the faulting rank's peers waiting (asleep, by then) in
  // the first calls of a fresh communicator. prepare() does the rest.
  base_ = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd.get(), 0);
  if (base_ == MAP_FAILED) {
    base_ = nullptr;
    return systemErrorf(errno, "rank %d: mmap(%s)", rank_, name_.c_str());
  }
  controls_ = reinterpret_cast<ShmGroupRank*>(static_cast<char*>(base_) + controlsOffset());
  data_ = static_cast<char*>(base_) + dataOffset(ranks_);
  return {};
}

void ShmGroup::initialise() {
  // ftruncate gave zeroes: every posted / done word reads as call 0, and
  // calls are numbered from 1.
  auto* h = static_cast<GroupHeader*>(base_);
  h->ranks = static_cast<uint32_t>(ranks_);
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
  if (h->ranks != static_cast<uint32_t>(ranks_) || h->slotBytes != slotBytes_) {
    return errorf(rinaInvalidUsage,
                  "rank %d: the host segment %s is for %u ranks of %llu-byte slots, this rank "
                  "expects %d of %zu",
                  rank_, name_.c_str(), h->ranks, static_cast<unsigned long long>(h->slotBytes),
                  ranks_, slotBytes_);
  }
  return {};
}

void ShmGroup::markJoined() {
  ShmGroupRank& me = control(rank_);
  me.pid = static_cast<int32_t>(getpid());
  me.probeAddr = reinterpret_cast<uintptr_t>(&probe_);
  auto* h = static_cast<GroupHeader*>(base_);
  if (h->joined.fetch_add(1) + 1 == static_cast<uint32_t>(ranks_)) {
    shm_unlink(name_.c_str());  // everyone has it mapped
    linked_ = false;
  }
  futexWake(&h->joined);
}

Status ShmGroup::waitJoined(Deadline deadline, const std::atomic<bool>* abort) {
  auto* h = static_cast<GroupHeader*>(base_);
  for (;;) {
    const uint32_t seen = h->joined.load();
    if (seen >= static_cast<uint32_t>(ranks_)) break;
    if (abort && abort->load()) return errorf(rinaAborted, "rank %d: aborted", rank_);
    const int64_t left = msUntil(deadline);
    if (left <= 0) {
      return errorf(rinaTimeout, "rank %d: only %u of %d ranks on this host mapped %s", rank_, seen,
                    ranks_, name_.c_str());
    }
    WaitSet ws;
    ws.addFutex(&h->joined, seen, &h->joinSleeping);
    ws.wait(static_cast<int>(std::min<int64_t>(left, 100)));
  }
  linked_ = false;  // the last rank to join removed the name
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
  publish(&control(rank_).copyCheck, works ? 1 : 2);
  for (int r = 0; r < ranks_; ++r) {
    for (;;) {
      const uint32_t seen = control(r).copyCheck.load();
      if (seen != 0) break;
      if (abort && abort->load()) return errorf(rinaAborted, "rank %d: aborted", rank_);
      const int64_t left = msUntil(deadline);
      if (left <= 0) {
        return errorf(rinaTimeout,
                      "rank %d: rank %d never said whether it can copy between "
                      "processes (%s)",
                      rank_, r, name_.c_str());
      }
      WaitSet ws;
      ws.addFutex(&control(r).copyCheck, seen, &control(rank_).sleeping);
      ws.wait(static_cast<int>(std::min<int64_t>(left, 100)));
    }
  }
  return {};
}

bool ShmGroup::copiesWork() const {
  for (int r = 0; r < ranks_; ++r) {
    if (control(r).copyCheck.load(std::memory_order_relaxed) != 1) return false;
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
  if (linked_) shm_unlink(name_.c_str());
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
  // The renumbered group's collectives count from 0 again.
  control(rank_).announced.store(0);
  // Peers reusing a slot wait for this rank's done to reach the round the
  // slot last carried, which is at most base.
  publish(&control(rank_).done, base);
}

void ShmGroup::finish(uint32_t round) { publish(&control(rank_).done, round); }

}  // namespace rina::transport
