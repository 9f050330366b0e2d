#include "core/shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

namespace rina {
namespace {

constexpr const char* kNamePrefix = "rina-mem-";

struct Allocation {
  size_t size;
  int fd;
  uint64_t serial;
};

// Allocations by their first byte. Never destroyed, so a free from a
// static destructor still finds it.
struct Registry {
  std::mutex mutex;
  std::map<uintptr_t, Allocation> byBase;
  uint64_t lastSerial = 0;
};

Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

// The allocation holding p under r.mutex, or end().
std::map<uintptr_t, Allocation>::iterator holding(Registry& r, uintptr_t p) {
  auto it = r.byBase.upper_bound(p);
  if (it == r.byBase.begin()) return r.byBase.end();
  --it;
  return p - it->first < it->second.size ? it : r.byBase.end();
}

}  // namespace

Status allocateSharedMemory(size_t size, void** ptr) {
  Registry& r = registry();
  uint64_t serial;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    serial = ++r.lastSerial;
  }
  const std::string name = kNamePrefix + std::to_string(serial);
  const int fd = memfd_create(name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return systemErrorf(errno, "rinaMemAlloc: memfd_create(%s)", name.c_str());
  // Sealed at its size, so a peer that mapped it can trust its size (a
  // shrink would fault the peer's reads).
  if (ftruncate(fd, static_cast<off_t>(size)) != 0 ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    const int err = errno;
    close(fd);
    return systemErrorf(err, "rinaMemAlloc: sizing %s to %zu bytes", name.c_str(), size);
  }
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    close(fd);
    return systemErrorf(err, "rinaMemAlloc: mmap of %zu bytes", size);
  }
  std::lock_guard<std::mutex> lock(r.mutex);
  r.byBase[reinterpret_cast<uintptr_t>(p)] = Allocation{size, fd, serial};
  *ptr = p;
  return {};
}

Status freeSharedMemory(void* ptr) {
  Registry& r = registry();
  Allocation a;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
    auto it = r.byBase.find(p);
    if (it == r.byBase.end()) {
      if (holding(r, p) != r.byBase.end()) {
        return errorf(rinaInvalidUsage,
                      "rinaMemFree: %p lies inside memory from rinaMemAlloc but is not the "
                      "pointer it returned",
                      ptr);
      }
      return errorf(rinaInvalidUsage,
                    "rinaMemFree: %p is not memory from rinaMemAlloc (or was freed already)", ptr);
    }
    a = it->second;
    r.byBase.erase(it);
  }
  munmap(ptr, a.size);
  close(a.fd);
  return {};
}

bool findSharedMemory(const void* p, size_t len, SharedMemoryRange* out) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  const uintptr_t at = reinterpret_cast<uintptr_t>(p);
  auto it = holding(r, at);
  if (it == r.byBase.end()) return false;
  const size_t offset = at - it->first;
  if (len > it->second.size - offset) return false;
  *out = SharedMemoryRange{it->second.fd, it->second.serial, offset, it->second.size};
  return true;
}

PeerMappings::~PeerMappings() { clear(); }

void PeerMappings::clear() {
  for (const Mapping& m : maps_) munmap(m.base, m.size);
  maps_.clear();
}

Status PeerMappings::open(int rank, int peer, const PeerAllocation& a, Mapping* m) {
  const std::string path = procRoot_ + "/" + std::to_string(a.pid) + "/fd/" + std::to_string(a.fd);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return systemErrorf(errno, "rank %d: opening peer %d's send buffer memory %s (pid %d)", rank,
                        peer, path.c_str(), a.pid);
  }
  // What was opened, read through this process's own descriptor: no race
  // with the peer closing and reusing its fd number.
  char self[64], target[128];
  std::snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
  const ssize_t len = readlink(self, target, sizeof target - 1);
  const std::string want =
      "/memfd:" + std::string(kNamePrefix) + std::to_string(a.serial) + " (deleted)";
  struct stat st {};
  if (len < 0 || std::string(target, static_cast<size_t>(len)) != want || fstat(fd, &st) != 0) {
    close(fd);
    return errorf(rinaRemoteError,
                  "rank %d: peer %d (pid %d) names fd %d as its allocation #%llu from "
                  "rinaMemAlloc, but that fd is %s",
                  rank, peer, a.pid, a.fd, static_cast<unsigned long long>(a.serial),
                  len < 0 ? "unreadable" : std::string(target, static_cast<size_t>(len)).c_str());
  }
  m->size = static_cast<size_t>(st.st_size);
  void* p = m->size == 0 ? MAP_FAILED : mmap(nullptr, m->size, PROT_READ, MAP_SHARED, fd, 0);
  const int err = errno;
  close(fd);
  if (p == MAP_FAILED) {
    return systemErrorf(err, "rank %d: mapping peer %d's allocation #%llu (%zu bytes, pid %d)",
                        rank, peer, static_cast<unsigned long long>(a.serial), m->size, a.pid);
  }
  m->peer = peer;
  m->pid = a.pid;
  m->serial = a.serial;
  m->base = static_cast<char*>(p);
  return {};
}

void PeerMappings::evictOne(int peer) {
  size_t held = 0, oldest = maps_.size();
  for (size_t i = 0; i < maps_.size(); ++i) {
    if (maps_[i].peer != peer) continue;
    ++held;
    if (oldest == maps_.size() || maps_[i].used < maps_[oldest].used) oldest = i;
  }
  if (held < perPeer_) return;
  munmap(maps_[oldest].base, maps_[oldest].size);
  maps_.erase(maps_.begin() + static_cast<std::ptrdiff_t>(oldest));
}

Status PeerMappings::map(int rank, int peer, const PeerAllocation& a, size_t offset, size_t bytes,
                         const char** at) {
  Mapping* m = nullptr;
  for (Mapping& held : maps_) {
    if (held.peer == peer && held.pid == a.pid && held.serial == a.serial) m = &held;
  }
  if (!m) {
    Mapping fresh{};
    RINA_TRY(open(rank, peer, a, &fresh));
    evictOne(peer);
    maps_.push_back(fresh);
    m = &maps_.back();
  }
  m->used = ++clock_;
  if (offset > m->size || bytes > m->size - offset) {
    return errorf(rinaRemoteError,
                  "rank %d: peer %d names bytes [%zu, +%zu) of its allocation #%llu from "
                  "rinaMemAlloc, which has %zu",
                  rank, peer, offset, bytes, static_cast<unsigned long long>(a.serial), m->size);
  }
  *at = m->base + offset;
  return {};
}

}  // namespace rina
