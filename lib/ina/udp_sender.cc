// The UDP backend of the INA client: native datagrams by sendmmsg, runs to
// one switch port as segmented sends (udp_batch.h).
#include <vector>

#include "ina/ina_sender.h"
#include "wire/endpoint.h"
#include "wire/udp_batch.h"

namespace rina::ina {
namespace {

// A full send buffer is waited on for up to a second per batch; past that
// the datagrams count as lost and the retransmission timer resends them.
constexpr int kMaxStalls = 1000;

class UdpSender : public InaSender {
 public:
  UdpSender(int fd, uint32_t switchAddr) : fd_(fd), switchAddr_(switchAddr) {}
  const char* name() const override { return "udp"; }
  Status setGrant(const Grant&) override { return {}; }
  Status send(std::span<const OutDatagram> batch) override;

 private:
  int fd_;
  uint32_t switchAddr_;
  UdpBatchSender sender_;
  std::vector<UdpOut> out_;
};

Status UdpSender::send(std::span<const OutDatagram> batch) {
  out_.resize(batch.size());
  for (size_t k = 0; k < batch.size(); ++k) {
    const OutDatagram& d = batch[k];
    out_[k] = {Endpoint{switchAddr_, d.port}.toSockaddr(), d.bytes.data(),
               static_cast<uint32_t>(d.bytes.size())};
  }
  sender_.send(fd_, out_, kMaxStalls);
  return {};
}

}  // namespace

std::unique_ptr<InaSender> makeUdpSender(int fd, uint32_t switchAddr) {
  return std::make_unique<UdpSender>(fd, switchAddr);
}

}  // namespace rina::ina
