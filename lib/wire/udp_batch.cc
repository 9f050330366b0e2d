#include "wire/udp_batch.h"

#include <errno.h>
#include <netinet/udp.h>
#include <poll.h>
#include <string.h>

#include <algorithm>

#include "core/config.h"
#include "core/log.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

namespace rina::ina {
namespace {

// UDP_GRO's segment size and SO_RXQ_OVFL's drop counter.
constexpr size_t kRxControlBytes = CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(uint32_t));
constexpr size_t kGroBufferBytes = 65536;

bool sameTo(const sockaddr_in& a, const sockaddr_in& b) {
  return a.sin_addr.s_addr == b.sin_addr.s_addr && a.sin_port == b.sin_port;
}

}  // namespace

bool udpOffloadEnabled() { return config::environment().inaUdpOffload; }

size_t UdpBatchSender::build(std::span<const UdpOut> out, size_t next) {
  size_t m = 0;
  size_t iov = 0;
  while (m < kMessages && next < out.size()) {
    const UdpOut& first = out[next];
    size_t n = 1;
    size_t bytes = first.len;
    if (segment_ && first.len > 0 && first.len < limit_) {
      // Same address, same length; a shorter datagram may close the run.
      while (next + n < out.size() && n < kMaxSegments) {
        const UdpOut& d = out[next + n];
        if (!sameTo(d.to, first.to) || d.len == 0 || d.len > first.len ||
            bytes + d.len > kMaxSegmentedBytes) {
          break;
        }
        bytes += d.len;
        ++n;
        if (d.len < first.len) break;
      }
    }
    mmsghdr& h = hdrs_[m];
    h = {};
    addrs_[m] = first.to;
    h.msg_hdr.msg_name = &addrs_[m];
    h.msg_hdr.msg_namelen = sizeof(sockaddr_in);
    h.msg_hdr.msg_iov = &iovs_[iov];
    h.msg_hdr.msg_iovlen = n;
    for (size_t k = 0; k < n; ++k) {
      iovs_[iov++] = {const_cast<uint8_t*>(out[next + k].data), out[next + k].len};
    }
    if (n > 1) {
      uint8_t* c = &control_[m * kSegmentControlBytes];
      memset(c, 0, kSegmentControlBytes);
      h.msg_hdr.msg_control = c;
      h.msg_hdr.msg_controllen = kSegmentControlBytes;
      cmsghdr* cm = CMSG_FIRSTHDR(&h.msg_hdr);
      cm->cmsg_level = SOL_UDP;
      cm->cmsg_type = UDP_SEGMENT;
      cm->cmsg_len = CMSG_LEN(sizeof(uint16_t));
      const uint16_t size = static_cast<uint16_t>(first.len);
      memcpy(CMSG_DATA(cm), &size, sizeof size);
    }
    counts_[m] = static_cast<uint32_t>(n);
    next += n;
    ++m;
  }
  return m;
}

UdpBatchSender::Result UdpBatchSender::send(int fd, std::span<const UdpOut> out, int maxStalls) {
  Result r;
  size_t next = 0;
  int stalls = 0;
  while (next < out.size()) {
    const size_t m = build(out, next);
    int sent = ::sendmmsg(fd, hdrs_.data(), static_cast<unsigned>(m), 0);
    if (sent > 0) {
      for (int k = 0; k < sent; ++k) next += counts_[static_cast<size_t>(k)];
      r.messages += static_cast<size_t>(sent);
      continue;
    }
    const int err = sent < 0 ? errno : EAGAIN;
    if (err == EAGAIN || err == ENOBUFS) {
      if (stalls++ < maxStalls) {
        pollfd p{fd, POLLOUT, 0};
        ::poll(&p, 1, 1);
        continue;
      }
    } else if (counts_[0] > 1 &&
               (err == EMSGSIZE || err == EINVAL || err == EIO || err == EOPNOTSUPP)) {
      // The kernel refuses segments of this size (EMSGSIZE, EINVAL before
      // 6.x: a segment over the path MTU, which single datagrams cross as
      // IP fragments; EIO: no checksum offload): send them one by one from
      // now on.
      const size_t len = out[next].len;
      RINA_INFO(
          "udp: segmentation offload refused for %zu-byte datagrams (%s); sending them one "
          "by one",
          len, strerror(err));
      limit_ = std::min(limit_, len);
      continue;
    }
    // Anything else (ECONNREFUSED from an earlier ICMP error, ...): the
    // datagrams of this message count as lost.
    r.dropped += counts_[0];
    next += counts_[0];
  }
  return r;
}

bool UdpBatchReceiver::enableGro(int fd) {
  if (!udpOffloadEnabled()) return false;
  int one = 1;
  return ::setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof one) == 0;
}

bool UdpBatchReceiver::enableDropCount(int fd) {
  int one = 1;
  return ::setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof one) == 0;
}

UdpBatchReceiver::UdpBatchReceiver(size_t messages, size_t datagramBytes, bool gro)
    : gro_(gro),
      buffers_(messages, std::vector<uint8_t>(gro ? std::max(datagramBytes, kGroBufferBytes)
                                                  : datagramBytes)),
      from_(messages),
      control_(messages * kRxControlBytes),
      hdrs_(messages),
      iovs_(messages) {
  datagrams_.reserve(messages);
  // Set up once; a receive resets only the fields recvmmsg wrote back.
  for (size_t k = 0; k < messages; ++k) {
    iovs_[k] = {buffers_[k].data(), buffers_[k].size()};
    msghdr& h = hdrs_[k].msg_hdr;
    h.msg_name = &from_[k];
    h.msg_namelen = sizeof(sockaddr_in);
    h.msg_iov = &iovs_[k];
    h.msg_iovlen = 1;
    h.msg_control = &control_[k * kRxControlBytes];
    h.msg_controllen = kRxControlBytes;
  }
}

int UdpBatchReceiver::receive(int fd) {
  const size_t n = buffers_.size();
  for (size_t k = 0; k < dirty_; ++k) {
    msghdr& h = hdrs_[k].msg_hdr;
    h.msg_namelen = sizeof(sockaddr_in);
    h.msg_controllen = kRxControlBytes;
    h.msg_flags = 0;
  }
  datagrams_.clear();
  drops_ = 0;
  int got = ::recvmmsg(fd, hdrs_.data(), static_cast<unsigned>(n), MSG_DONTWAIT, nullptr);
  dirty_ = got > 0 ? static_cast<size_t>(got) : 0;
  for (int k = 0; k < got; ++k) {
    msghdr& h = hdrs_[static_cast<size_t>(k)].msg_hdr;
    const uint32_t len = hdrs_[static_cast<size_t>(k)].msg_len;
    uint8_t* data = buffers_[static_cast<size_t>(k)].data();
    const uint32_t message = static_cast<uint32_t>(k);
    uint32_t segment = 0;
    for (cmsghdr* cm = CMSG_FIRSTHDR(&h); cm; cm = CMSG_NXTHDR(&h, cm)) {
      if (cm->cmsg_level == SOL_UDP && cm->cmsg_type == UDP_GRO) {
        int size = 0;
        memcpy(&size, CMSG_DATA(cm), sizeof size);
        if (size > 0) segment = static_cast<uint32_t>(size);
      } else if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SO_RXQ_OVFL) {
        uint32_t drops = 0;
        memcpy(&drops, CMSG_DATA(cm), sizeof drops);
        drops_ = std::max(drops_, drops);
      }
    }
    if (h.msg_flags & MSG_TRUNC) {
      datagrams_.push_back({data, len, true, message});
      continue;
    }
    if (!gro_ || segment == 0 || segment >= len) {
      datagrams_.push_back({data, len, false, message});
      continue;
    }
    for (uint32_t at = 0; at < len; at += segment) {
      datagrams_.push_back({data + at, std::min(segment, len - at), false, message});
    }
  }
  return got;
}

}  // namespace rina::ina
