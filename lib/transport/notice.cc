#include "transport/notice.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

namespace rina::transport {

const char* noticeKindName(NoticeKind k) {
  switch (k) {
    case NoticeKind::kRevoke:
      return "revoke";
    case NoticeKind::kProposal:
      return "shrink proposal";
    case NoticeKind::kVerdict:
      return "shrink verdict";
    case NoticeKind::kRefusal:
      return "shrink refusal";
  }
  return "unknown notice";
}

std::string encodeNotice(const Notice& n, int to, uint64_t commId) {
  PeerHello hello{};
  hello.magic = kPeerMagic;
  hello.from = n.from;
  hello.to = to;
  hello.commId = commId;
  hello.nsocks = 1;
  hello.spine = -1;
  hello.kind = kNoticeHello;
  const std::string text = n.text.substr(0, kMaxNoticeText);
  NoticeHeader h{};
  h.magic = kNoticeMagic;
  h.kind = static_cast<uint32_t>(n.kind);
  h.attempt = n.attempt;
  h.from = n.from;
  h.nranks = static_cast<int32_t>(n.ranks.size());
  h.flags = n.flags;
  h.hostRound = n.hostRound;
  h.textBytes = static_cast<uint32_t>(text.size());
  std::string out(reinterpret_cast<const char*>(&hello), sizeof hello);
  out.append(reinterpret_cast<const char*>(&h), sizeof h);
  std::string bits((n.ranks.size() + 7) / 8, '\0');
  for (size_t r = 0; r < n.ranks.size(); ++r) {
    if (n.ranks[r]) bits[r / 8] = static_cast<char>(bits[r / 8] | (1 << (r % 8)));
  }
  out += bits;
  out += text;
  return out;
}

Status readNotice(int fd, const PeerHello& hello, int nranks, Deadline deadline, Notice* out) {
  NoticeHeader h{};
  RINA_TRY(recvAll(fd, &h, sizeof h, deadline).prepend("a notice: "));
  const char* bad = h.magic != kNoticeMagic ? "wrong magic"
                    : h.kind < static_cast<uint32_t>(NoticeKind::kRevoke) ||
                            h.kind > static_cast<uint32_t>(NoticeKind::kRefusal)
                        ? "unknown kind"
                    : h.nranks != nranks ? "it names a communicator of another size"
                    : h.from < 0 || h.from >= nranks || h.from != hello.from
                        ? "its sender is not the rank its hello names"
                    : h.textBytes > kMaxNoticeText ? "its text is too long"
                                                   : nullptr;
  if (bad) {
    return errorf(rinaRemoteError, "a notice from rank %d was refused: %s", hello.from, bad);
  }
  std::vector<uint8_t> bits((static_cast<size_t>(nranks) + 7) / 8);
  RINA_TRY(recvAll(fd, bits.data(), bits.size(), deadline).prepend("a notice's ranks: "));
  std::string text(h.textBytes, '\0');
  RINA_TRY(recvAll(fd, text.data(), text.size(), deadline).prepend("a notice's text: "));
  out->kind = static_cast<NoticeKind>(h.kind);
  out->attempt = h.attempt;
  out->from = h.from;
  out->flags = h.flags;
  out->hostRound = h.hostRound;
  out->ranks.assign(static_cast<size_t>(nranks), false);
  for (int r = 0; r < nranks; ++r) out->ranks[r] = (bits[r / 8] >> (r % 8)) & 1;
  // Bits beyond nranks in the last byte name no rank: a sender that sets
  // them does not speak this protocol.
  if (nranks % 8 != 0 && (bits.back() >> (nranks % 8)) != 0) {
    return errorf(rinaRemoteError, "a notice from rank %d names ranks beyond %d", hello.from,
                  nranks - 1);
  }
  out->text = std::move(text);
  return {};
}

Status sendNotice(const PackedAddr& addr, const std::string& bytes, Deadline deadline, Fd* fd) {
  RINA_TRY(connectOnce(addr, deadline, fd));
  return sendAll(fd->get(), bytes.data(), bytes.size(), deadline);
}

void postNotices(const std::vector<PackedAddr>& addrs, const std::vector<std::string>& bytes,
                 Deadline deadline, std::vector<Status>* results) {
  const size_t n = addrs.size();
  results->assign(n, Status());
  // Connect to every one at once (non-blocking), then write each as it
  // becomes writable: a notice is small, so one write takes it whole.
  std::vector<Fd> fds(n);
  std::vector<size_t> sent(n, 0);
  std::vector<bool> open(n, false);
  for (size_t i = 0; i < n; ++i) {
    Fd fd(socket(addrs[i].family == AF_INET6 ? AF_INET6 : AF_INET,
                 SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd.valid()) {
      (*results)[i] = systemErrorf(errno, "socket");
      continue;
    }
    socklen_t len = 0;
    sockaddr_storage ss = addrs[i].toSockaddr(&len);
    if (connect(fd.get(), reinterpret_cast<sockaddr*>(&ss), len) != 0 && errno != EINPROGRESS) {
      (*results)[i] = Status(errno == ECONNREFUSED ? rinaRemoteError : rinaSystemError,
                             "connect to " + addrs[i].str() + ": " + std::strerror(errno));
      continue;
    }
    fds[i] = std::move(fd);
    open[i] = true;
  }
  for (;;) {
    std::vector<pollfd> waits;
    std::vector<size_t> who;
    for (size_t i = 0; i < n; ++i) {
      if (!open[i]) continue;
      waits.push_back({fds[i].get(), POLLOUT, 0});
      who.push_back(i);
    }
    if (waits.empty()) return;
    const int64_t left = msUntil(deadline);
    if (left <= 0) {
      for (size_t i : who) {
        (*results)[i] =
            errorf(rinaTimeout, "%s: no answer before the deadline", addrs[i].str().c_str());
      }
      return;
    }
    if (poll(waits.data(), waits.size(), static_cast<int>(std::min<int64_t>(left, 100))) <= 0) {
      continue;
    }
    for (size_t k = 0; k < waits.size(); ++k) {
      if (!waits[k].revents) continue;
      const size_t i = who[k];
      int err = 0;
      socklen_t errLen = sizeof err;
      getsockopt(fds[i].get(), SOL_SOCKET, SO_ERROR, &err, &errLen);
      ssize_t w = err ? -1
                      : send(fds[i].get(), bytes[i].data() + sent[i], bytes[i].size() - sent[i],
                             MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w < 0 && !err) {
        if (errno == EAGAIN || errno == EINTR) continue;
        err = errno;
      }
      if (err) {
        (*results)[i] =
            Status(err == ECONNREFUSED || err == ECONNRESET ? rinaRemoteError : rinaSystemError,
                   "notice to " + addrs[i].str() + ": " + std::strerror(err));
        open[i] = false;
        continue;
      }
      sent[i] += static_cast<size_t>(w);
      if (sent[i] == bytes[i].size()) open[i] = false;
    }
  }
}

}  // namespace rina::transport
