// One aggregation thread of rina-switchd: a UDP socket, the Pipeline of its
// slot shard, batched receive (recvmmsg) and send (sendmmsg), receive-side
// fault injection and a token bucket modelling the switch's capacity.
// Control changes run on the thread itself (runOnThread), so the pipeline
// needs no locks.
#ifndef RINA_P4_AGENT_SWITCHD_DATA_THREAD_H_
#define RINA_P4_AGENT_SWITCHD_DATA_THREAD_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "rina/ina_roce.h"
#include "switchd/pipeline.h"
#include "wire/net.h"
#include "wire/udp_batch.h"

namespace rina::switchd {

// --roce-raw: RoCEv2 through raw IPv4 sockets, so the switch sees and
// makes whole packets (switchd/roce_frame.h). Received frames are checked
// against their ICRC (a bad one is dropped and counted); members whose UC
// queue pair attached a receive ring (include/rina/ina_roce.h) get their
// answers as RDMA WRITE with immediate into it, which their NIC accepts.
struct RawRoce {
  Fd receive;         // SOCK_RAW, IPPROTO_UDP, filtered to `port`
  Fd send;            // SOCK_RAW, IPPROTO_RAW (the packets carry their IP header)
  uint16_t port = 0;  // this thread's RoCEv2 port
};

struct DataThreadOptions {
  double dropRate = 0.0;      // probability of dropping a received datagram
  double sendDropRate = 0.0;  // probability of dropping a datagram it sends (each copy)
  uint64_t seed = 1;
  double capacityPps = 0.0;  // this thread's share; 0 = unlimited
  int cpu = -1;              // pin to this CPU if >= 0
};

class DataThread {
 public:
  // Takes a bound UDP socket for the native layout (ina_wire.h) and,
  // optionally, one for the RoCEv2 layout (ina_roce.h). A job whose
  // datagrams arrive in the RoCEv2 layout is answered in it.
  DataThread(Fd socket, const PipelineConfig& config, const DataThreadOptions& options,
             Fd roceSocket = Fd(), RawRoce raw = RawRoce());
  ~DataThread();
  DataThread(const DataThread&) = delete;
  DataThread& operator=(const DataThread&) = delete;

  // Runs fn(pipeline) on the data thread; false if not done within timeoutMs.
  bool runOnThread(std::function<void(Pipeline&)> fn, int timeoutMs);

  const Pipeline& pipeline() const { return pipeline_; }
  uint64_t injectedDrops() const { return injectedDrops_.get(); }
  uint64_t injectedSendDrops() const { return injectedSendDrops_.get(); }
  uint64_t capacityDrops() const { return capacityDrops_.get(); }
  uint64_t received() const { return received_.get(); }
  uint64_t sendErrors() const { return sendErrors_.get(); }
  uint64_t roceReceived() const { return roceReceived_.get(); }
  uint64_t roceMalformed() const { return roceMalformed_.get(); }
  // Messages through recvmmsg / sendmmsg: fewer than the datagrams when the
  // kernel's UDP segmentation offloads carry several in one.
  uint64_t receivedMessages() const { return receivedMessages_.get(); }
  uint64_t sentMessages() const { return sentMessages_.get(); }
  // Datagrams the kernel dropped at this thread's sockets for a full receive
  // buffer (SO_RXQ_OVFL; counted from the first one it reports).
  uint64_t socketDrops() const { return socketDrops_.get(); }
  // --roce-raw: frames dropped for their ICRC, ring attachments taken and
  // refused, answers written into members' rings.
  uint64_t roceBadIcrc() const { return roceBadIcrc_.get(); }
  uint64_t roceAttached() const { return roceAttached_.get(); }
  uint64_t roceAttachRefused() const { return roceAttachRefused_.get(); }
  uint64_t roceNicSent() const { return roceNicSent_.get(); }

 private:
  void loop();
  void drainCommands();
  // Receives and processes up to 64 batches from fd; false when the socket
  // had nothing.
  void receive(int fd, bool roce);
  // --roce-raw: whole packets from the raw socket.
  void receiveRaw();
  // A datagram (native layout) that came as RoCEv2 from `from`, to `to`.
  void processRoce(const uint8_t* data, size_t len, const ina::Endpoint& from, uint32_t to,
                   uint64_t now);
  void attach(const ina::Header& h, const uint8_t* datagram, const ina::Endpoint& from,
              uint32_t to);
  // Writes a native datagram into a member's ring; false: no route.
  bool sendToRing(uint16_t job, const ina::Endpoint& to, const uint8_t* bytes, uint32_t length);
  void flush();
  void sendAll(const std::vector<OutMessage>& msgs, const Output& arena, int fd);

  Fd socket_;
  Fd roceSocket_;
  RawRoce raw_;
  Fd wakeup_;  // eventfd
  Pipeline pipeline_;
  Output output_;
  DataThreadOptions options_;
  std::atomic<bool> stop_{false};

  std::mutex mu_;
  std::condition_variable done_;
  std::deque<std::function<void(Pipeline&)>> commands_;
  uint64_t posted_ = 0;   // guarded by mu_
  uint64_t applied_ = 0;  // guarded by mu_

  Counter injectedDrops_, injectedSendDrops_, capacityDrops_, received_, sendErrors_;
  Counter roceReceived_, roceMalformed_, receivedMessages_, sentMessages_, socketDrops_;
  uint32_t dropsSeen_[2] = {0, 0};  // the kernel's counter per socket (native, RoCEv2)
  Counter roceBadIcrc_, roceAttached_, roceAttachRefused_, roceNicSent_;
  // A member's ring, by job << 8 | worker; kept only while the job's token
  // is the one it attached under (a new job with the same id drops it).
  struct RingRoute {
    uint64_t token = 0;
    uint32_t memberAddr = 0;  // the QP's IPv4 address (host order)
    uint32_t switchAddr = 0;  // the address the member's QP sends to: the source of answers
    ina::roce::RingAttach ring;
    uint32_t psn = 0;  // the next one to send
  };
  std::unordered_map<uint32_t, RingRoute> routes_;
  uint16_t ipId_ = 1;
  std::vector<uint8_t> frame_;
  // Data-thread state of the receive loop and the RoCEv2 translation.
  std::mt19937_64 rng_;
  double tokens_ = 0;
  std::chrono::steady_clock::time_point lastRefill_;
  std::unique_ptr<ina::UdpBatchReceiver> rx_;
  std::unique_ptr<ina::UdpBatchReceiver> rawRx_;  // --roce-raw: whole IPv4 packets
  ina::UdpBatchSender sender_;
  std::vector<uint32_t> order_;
  std::vector<ina::UdpOut> out_;
  std::vector<uint8_t> scratch_;
  std::unordered_set<uint16_t> roceJobs_;
  std::vector<OutMessage> plain_;
  Output roceOut_;
  std::thread thread_;  // last: starts after every member above exists
};

}  // namespace rina::switchd

#endif  // RINA_P4_AGENT_SWITCHD_DATA_THREAD_H_
