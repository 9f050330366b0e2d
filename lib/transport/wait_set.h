// Sleeping until a connection can move on: sockets through poll(), shared
// memory FIFOs through futexes (futex_waitv waits on several at once), so a
// rank that waits gives its core to the rank that works. On a 2-core host
// with 4 ranks this is what keeps collectives fast.
#ifndef RINA_LIB_TRANSPORT_WAIT_SET_H_
#define RINA_LIB_TRANSPORT_WAIT_SET_H_

#include <poll.h>

#include <atomic>
#include <cstdint>
#include <vector>

namespace rina::transport {

class WaitSet {
 public:
  void clear();
  void addFd(int fd, short events);
  // Wake when *word != expected. *sleeping is raised while waiting so that
  // the other side knows to call futexWake after changing *word.
  void addFutex(std::atomic<uint32_t>* word, uint32_t expected, std::atomic<uint32_t>* sleeping);
  // Returns when something may have changed or timeoutMs passed.
  void wait(int timeoutMs);
  bool empty() const { return fds_.empty() && futexes_.empty(); }

 private:
  struct FutexEntry {
    std::atomic<uint32_t>* word;
    uint32_t expected;
    std::atomic<uint32_t>* sleeping;
  };
  void waitFutexes(int timeoutMs);

  std::vector<pollfd> fds_;
  std::vector<FutexEntry> futexes_;
};

// Wakes every waiter on word (shared mappings included).
void futexWake(std::atomic<uint32_t>* word);

}  // namespace rina::transport

#endif  // RINA_LIB_TRANSPORT_WAIT_SET_H_
