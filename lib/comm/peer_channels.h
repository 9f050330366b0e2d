// A communicator's point-to-point channels (transport/channel.h): one
// directed connection per peer and direction, opened by the sender on its
// first message and taken by the receiver from the communicator's listening
// socket, which it shares with connection set-up (buildMesh): each files
// what the other takes (transport::Arrivals). The message numbers of each
// direction are counted here.
#ifndef RINA_LIB_COMM_PEER_CHANNELS_H_
#define RINA_LIB_COMM_PEER_CHANNELS_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "algo/p2p/point_to_point.h"
#include "transport/mesh.h"

namespace rina::comm {

class PeerChannels final : public algo::ChannelSource {
 public:
  // mesh: the communicator's connection settings (table, id, shared memory),
  // listenFd its listening socket, arrivals the queue it shares with
  // buildMesh; timeoutMs bounds opening a channel and reading a hello;
  // spinUs is RINA_SPIN_US (see pollUs); limits: the RINA_P2P_* knobs.
  PeerChannels(const transport::MeshOptions& mesh, int listenFd, transport::Arrivals* arrivals,
               int64_t timeoutMs, int64_t spinUs, const algo::MessageLimits& limits);

  Status sendChannel(int peer, transport::Connection** out) override;
  transport::Connection* recvChannel(int peer) override;
  std::vector<transport::Connection*> recvChannels() override;
  Status takeArrivals(bool* took) override;
  void armArrivals(transport::WaitSet& ws) override;
  uint64_t nextSendSeq(int peer) override { return ++sendSeq_[peer]; }
  uint64_t nextRecvSeq(int peer) override { return ++recvSeq_[peer]; }
  uint64_t nextBatch() override { return ++batches_; }
  // RINA_SPIN_US when this host has a core for each of its ranks (polling
  // then costs no peer its turn, as with Open MPI's busy polling), else a
  // short 20 us: more ranks than cores need the yields of the engine's loop.
  int64_t pollUs() const override { return pollUs_; }
  const algo::MessageLimits& limits() const override { return limits_; }

  // Payload bytes moved over every channel, per transport::Direction.
  uint64_t bytes(transport::Direction d) const;

 private:
  const transport::MeshOptions& mesh_;
  int listenFd_;
  transport::Arrivals* arrivals_;
  int64_t timeoutMs_;
  // By peer rank (every rank has a slot: a send looks its channel up
  // without a search); recvOrder_ lists the channels taken, in order.
  std::vector<std::unique_ptr<transport::Connection>> out_, in_;
  std::vector<transport::Connection*> recvOrder_;
  std::vector<uint64_t> sendSeq_, recvSeq_;
  uint64_t batches_ = 0;
  int64_t pollUs_;
  algo::MessageLimits limits_;
};

}  // namespace rina::comm

#endif  // RINA_LIB_COMM_PEER_CHANNELS_H_
