// Which transport a rank uses across hosts, as a pure function of what the
// device probe found and the knobs, so every case is tested without a device.
//
//   RINA_IB_DISABLE=1                 -> sockets (whatever RINA_IB_HCA says)
//   built without libibverbs          -> sockets ("built without libibverbs")
//   ibv_get_device_list NULL / empty  -> sockets, one INFO line naming why
//   RINA_IB_HCA unset                 -> the first device, port 1
//   RINA_IB_HCA=name[:port] found     -> that device and port
//   RINA_IB_HCA names a missing device (or the build has no verbs), or is
//     malformed -> an error: the user
//     asked for a specific adapter, so silently using TCP would hide it.
#ifndef RINA_LIB_TRANSPORT_VERBS_SELECT_H_
#define RINA_LIB_TRANSPORT_VERBS_SELECT_H_

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace rina::transport::verbs {

struct DeviceProbe {
  bool built = false;   // librina has the verbs transport
  bool listOk = false;  // ibv_get_device_list returned non-NULL
  int listErrno = 0;    // its errno when it returned NULL
  std::vector<std::string> names;
};

struct HcaSpec {
  std::string name;  // empty: any
  int port = 1;
};

// "mlx5_0", "mlx5_0:2", "" (any). Ports are 1..255.
Status parseHcaSpec(std::string_view text, HcaSpec* out);

struct TransportChoice {
  bool useVerbs = false;
  std::string device;
  int port = 1;
  std::string why;         // the INFO line
  std::string whyNotRdma;  // without verbs: the reason alone, for other users (INA)

  void notUsed(std::string reason) {
    useVerbs = false;
    whyNotRdma = std::move(reason);
    why = whyNotRdma + ", using sockets";
  }
};

Status chooseTransport(const DeviceProbe& probe, std::string_view hcaKnob, bool disabled,
                       TransportChoice* out);

}  // namespace rina::transport::verbs

#endif  // RINA_LIB_TRANSPORT_VERBS_SELECT_H_
