#include "transport/verbs/rdma_setup.h"

#include <mutex>

#include "core/config.h"
#include "core/log.h"
#include "cuda/cuda_support.h"
#include "transport/verbs/nic_placement.h"

namespace rina::transport::verbs {

Status chooseDevice(int rank, const config::Options& o, TransportChoice* out) {
  const bool disabled = o.ibDisable;
  const DeviceProbe probe = disabled ? DeviceProbe{true, false, 0, {}} : probeDevices();
  const std::string& hca = o.ibHca;
  Status s = chooseTransport(probe, hca, disabled, out);
  if (!s.ok()) return s.prepend("rank " + std::to_string(rank) + ": ");
  // Several adapters and a GPU: the one nearest the GPU, as NCCL does.
  std::string gpuBus;
  if (out->useVerbs && probe.names.size() > 1 && cuda::currentDeviceBusId(&gpuBus, nullptr)) {
    preferNicNearGpu("/sys", gpuBus, probe.names, !hca.empty(), out);
  }
  return {};
}

VerbsOptions verbsOptionsOf(int rank, const config::Options& o) {
  VerbsOptions vo;
  vo.rank = rank;
  vo.gidIndex = static_cast<int>(o.ibGidIndex);
  vo.timeout = static_cast<int>(o.ibTimeout);
  return vo;
}

Status RdmaSetup::init(int rank, const config::Options& o) {
  verbs_ = verbsOptionsOf(rank, o);
  RINA_TRY(chooseDevice(rank, o, &choice_));
  // GPUDirect (gpu_direct.h): only asks CUDA when an adapter was chosen.
  GdrMode mode;
  RINA_TRY(parseGdrMode(o.ibGdr, &mode).prepend("rank " + std::to_string(rank) + ": "));
  GdrProbe gp;
  gp.verbsDmabuf = verbsHasDmabuf();
  gp.rdmaDevice = choice_.useVerbs;
  gp.rdmaWhy = choice_.whyNotRdma;
  if (gp.rdmaDevice && mode != GdrMode::kOff) {
    gp.gpu = cuda::usable(&gp.gpuWhy);
    if (gp.gpu) gp.gpuDmabuf = cuda::dmabufSupported(&gp.gpuDmabufWhy);
  }
  RINA_TRY(chooseGdr(mode, gp, &gdr_).prepend("rank " + std::to_string(rank) + ": "));
  static std::once_flag logged;
  std::call_once(logged, [&] {
    RINA_INFO("%s", choice_.why.c_str());
    if (choice_.useVerbs) RINA_INFO("%s", gdr_.why.c_str());
  });
  return {};
}

Status RdmaSetup::finish(const Deadline& deadline,
                         std::map<int, std::unique_ptr<Connection>>* out) {
  if (pairs_.empty()) return {};
  VerbsContextPtr ctx;
  Status opened = openVerbsContext(choice_, verbs_, &ctx);
  std::vector<std::unique_ptr<PendingVerbsConnection>> pending(pairs_.size());
  std::vector<int> fds;
  Status first;
  for (size_t i = 0; i < pairs_.size(); ++i) {
    int fd = pairs_[i].fd.get();
    fds.push_back(fd);
    Status s = opened;
    if (s.ok())
      s = prepareVerbsConnection(ctx, pairs_[i].peer, std::move(pairs_[i].fd), &pending[i]);
    // A side that cannot set up still sends a record (all zero), so its
    // peer fails at once with a message instead of waiting for the timeout.
    QpInfoWire wire{};
    if (s.ok()) wire = encodeQpInfo(pending[i]->localInfo());
    Status sent = sendAll(fd, wire.data(), wire.size(), deadline);
    if (first.ok() && !s.ok())
      first = s.prepend("RDMA setup with peer " + std::to_string(pairs_[i].peer) + ": ");
    if (first.ok() && !sent.ok())
      first = sent.prepend("rank " + std::to_string(verbs_.rank) + ": sending RDMA info to peer " +
                           std::to_string(pairs_[i].peer) + ": ");
  }
  if (!first.ok()) return first;
  for (size_t i = 0; i < pairs_.size(); ++i) {
    const int peer = pairs_[i].peer;
    QpInfoWire wire{};
    QpInfo remote;
    Status s = recvAll(fds[i], wire.data(), wire.size(), deadline);
    if (s.ok()) s = decodeQpInfo(wire, &remote);
    if (s.ok()) s = pending[i]->connect(remote, &(*out)[peer]);
    if (!s.ok()) {
      out->erase(peer);
      return s.prepend("rank " + std::to_string(verbs_.rank) + ": RDMA setup with peer " +
                       std::to_string(peer) + ": ");
    }
  }
  pairs_.clear();
  return {};
}

}  // namespace rina::transport::verbs
