// The UDP backend of the INA client: native datagrams by sendmmsg.
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>

#include "ina/endpoint.h"
#include "ina/ina_sender.h"

namespace rina::ina {
namespace {

constexpr size_t kBatch = 64;

class UdpSender : public InaSender {
 public:
  UdpSender(int fd, uint32_t switchAddr) : fd_(fd), switchAddr_(switchAddr) {}
  const char* name() const override { return "udp"; }
  Status setGrant(const Grant&) override { return {}; }
  Status send(std::span<const OutDatagram> batch) override;

 private:
  int fd_;
  uint32_t switchAddr_;
};

Status UdpSender::send(std::span<const OutDatagram> batch) {
  size_t next = 0;
  while (next < batch.size()) {
    const size_t n = std::min(batch.size() - next, kBatch);
    mmsghdr hdrs[kBatch];
    iovec iovs[kBatch];
    sockaddr_in to[kBatch];
    for (size_t k = 0; k < n; ++k) {
      const OutDatagram& d = batch[next + k];
      to[k] = Endpoint{switchAddr_, d.port}.toSockaddr();
      iovs[k] = {const_cast<uint8_t*>(d.bytes.data()), d.bytes.size()};
      hdrs[k] = {};
      hdrs[k].msg_hdr.msg_name = &to[k];
      hdrs[k].msg_hdr.msg_namelen = sizeof to[k];
      hdrs[k].msg_hdr.msg_iov = &iovs[k];
      hdrs[k].msg_hdr.msg_iovlen = 1;
    }
    int sent = ::sendmmsg(fd_, hdrs, static_cast<unsigned>(n), 0);
    if (sent <= 0) {
      const bool full = sent < 0 && (errno == EAGAIN || errno == ENOBUFS);
      if (full) {
        pollfd p{fd_, POLLOUT, 0};
        ::poll(&p, 1, 1);
      }
      // Anything else (ECONNREFUSED from an ICMP error, ...): the datagram
      // counts as lost and the retransmission timer handles it.
      sent = sent < 0 && !full ? 1 : 0;
    }
    next += static_cast<size_t>(sent);
  }
  return {};
}

}  // namespace

std::unique_ptr<InaSender> makeUdpSender(int fd, uint32_t switchAddr) {
  return std::make_unique<UdpSender>(fd, switchAddr);
}

}  // namespace rina::ina
