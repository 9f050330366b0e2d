// Batched UDP I/O for the INA data plane, shared by the host client
// (lib/ina: udp_sender.cc, datagram_pump.cc) and rina-switchd
// (data_thread.cc), with the kernel's UDP segmentation offloads:
//
//   send     runs of consecutive datagrams to one address with one length
//            (the run's last may be shorter) leave as one UDP_SEGMENT
//            message: one skb through the veths, bridges and qdiscs instead
//            of one per datagram, cut into datagrams where a device needs it
//            or at a receiver that did not ask for UDP_GRO;
//   receive  with UDP_GRO a message may hold several datagrams of one
//            sender, gso_size bytes each (the last may be shorter); the
//            receiver cuts them apart again.
//
// Datagrams are unchanged on the wire either way, so each side may use the
// offloads or not. A segmented send the kernel refuses (EMSGSIZE/EINVAL: a
// segment over the path MTU, which a single datagram crosses as IP
// fragments; EIO: a device without checksum offload; an old kernel) lowers
// the segment size used from then on and the run goes out datagram by
// datagram.
#ifndef RINA_LIB_WIRE_UDP_BATCH_H_
#define RINA_LIB_WIRE_UDP_BATCH_H_

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace rina::ina {

// RINA_INA_UDP_OFFLOAD=0 turns both offloads off (default on; a knob of
// core/config.h, read where a sender or receiver is made).
bool udpOffloadEnabled();

struct UdpOut {
  sockaddr_in to{};
  const uint8_t* data = nullptr;
  uint32_t len = 0;
};

class UdpBatchSender {
 public:
  struct Result {
    size_t messages = 0;  // sendmmsg messages that left (one per segmented run)
    size_t dropped = 0;   // datagrams given up on (errors, or a full socket past maxStalls)
  };
  // Segments at most kMaxSegments datagrams and kMaxSegmentedBytes per message.
  static constexpr size_t kMaxSegments = 64;
  static constexpr size_t kMaxSegmentedBytes = 65507 - 8;

  explicit UdpBatchSender(bool segment = udpOffloadEnabled()) : segment_(segment) {}

  // Sends all of `out` in order from fd. A full socket is waited on for 1 ms
  // at a time, maxStalls times in all, then the message is dropped; any other
  // error drops the message it hit (the caller's retransmission recovers).
  Result send(int fd, std::span<const UdpOut> out, int maxStalls);

  // Segmented sends are used for datagrams shorter than this (starts at
  // "any length"; lowered by refusals).
  size_t segmentLimit() const { return segment_ ? limit_ : 0; }

 private:
  // Builds up to kMessages messages from out[next..]; returns how many.
  size_t build(std::span<const UdpOut> out, size_t next);

  static constexpr size_t kMessages = 64;
  static constexpr size_t kSegmentControlBytes = CMSG_SPACE(sizeof(uint16_t));
  bool segment_;
  size_t limit_ = SIZE_MAX;
  std::vector<mmsghdr> hdrs_ = std::vector<mmsghdr>(kMessages);
  std::vector<iovec> iovs_ = std::vector<iovec>(kMessages * kMaxSegments);
  std::vector<uint32_t> counts_ = std::vector<uint32_t>(kMessages);  // datagrams per message
  std::vector<sockaddr_in> addrs_ = std::vector<sockaddr_in>(kMessages);
  std::vector<uint8_t> control_ = std::vector<uint8_t>(kMessages * kSegmentControlBytes);
};

class UdpBatchReceiver {
 public:
  struct Datagram {
    uint8_t* data = nullptr;
    uint32_t len = 0;
    bool truncated = false;  // did not fit the buffer (MSG_TRUNC): len is what was kept
    uint32_t message = 0;    // index of the message it came in (for from())
  };
  // Turns on UDP_GRO for fd when offloads are enabled; false where the kernel
  // refuses it (the receiver then sees one datagram per message).
  static bool enableGro(int fd);
  // Turns on SO_RXQ_OVFL for fd: the kernel then tells, with what it
  // delivers, how many datagrams it dropped at the socket for a full
  // receive buffer (socketDrops()). False where it refuses.
  static bool enableDropCount(int fd);

  // `messages` per recvmmsg; each buffer holds `datagramBytes`, or a whole
  // segmented message (64 KiB) when `gro`.
  UdpBatchReceiver(size_t messages, size_t datagramBytes, bool gro);

  // One recvmmsg (MSG_DONTWAIT): the number of messages read, <= 0 for none.
  // datagrams() then lists what they held, in arrival order.
  int receive(int fd);
  std::span<Datagram> datagrams() { return datagrams_; }
  const sockaddr_in& from(const Datagram& d) const { return from_[d.message]; }
  size_t batch() const { return buffers_.size(); }
  // Datagrams the kernel had dropped at the socket (receive buffer full)
  // since it was opened, as the last receive()'s messages said: the counter
  // of enableDropCount(), which comes only once the socket dropped one (0
  // until then, for no message, and always without enableDropCount()). The
  // counter is the socket's: a caller that reads several sockets keeps the
  // highest per socket.
  uint32_t socketDrops() const { return drops_; }

 private:
  bool gro_;
  uint32_t drops_ = 0;
  size_t dirty_ = 0;  // headers [0, dirty_) were written by the last recvmmsg
  std::vector<std::vector<uint8_t>> buffers_;
  std::vector<sockaddr_in> from_;
  std::vector<uint8_t> control_;
  std::vector<mmsghdr> hdrs_;
  std::vector<iovec> iovs_;
  std::vector<Datagram> datagrams_;
};

}  // namespace rina::ina

#endif  // RINA_LIB_WIRE_UDP_BATCH_H_
