#include "transport/verbs/select.h"

#include <cstring>

namespace rina::transport::verbs {

Status parseHcaSpec(std::string_view text, HcaSpec* out) {
  *out = HcaSpec();
  size_t colon = text.find(':');
  out->name = std::string(text.substr(0, colon));
  if (colon == std::string_view::npos) return {};
  std::string_view port = text.substr(colon + 1);
  int value = 0;
  bool digits = !port.empty() && port.size() <= 3;
  for (char c : port) {
    if (c < '0' || c > '9') digits = false;
    value = value * 10 + (c - '0');
  }
  if (out->name.empty() || !digits || value < 1 || value > 255) {
    return errorf(rinaInvalidArgument,
                  "RINA_IB_HCA=%.*s: expected name[:port] with a port in 1..255",
                  static_cast<int>(text.size()), text.data());
  }
  out->port = value;
  return {};
}

Status chooseTransport(const DeviceProbe& probe, std::string_view hcaKnob, bool disabled,
                       TransportChoice* out) {
  *out = TransportChoice();
  HcaSpec spec;
  RINA_TRY(parseHcaSpec(hcaKnob, &spec));
  if (disabled) {
    out->notUsed("RDMA disabled by RINA_IB_DISABLE=1");
    return {};
  }
  std::string found;
  for (const std::string& n : probe.names) found += (found.empty() ? "" : ", ") + n;
  if (!spec.name.empty()) {
    for (const std::string& n : probe.names) {
      if (probe.built && n == spec.name) {
        out->useVerbs = true;
        out->device = n;
        out->port = spec.port;
        out->why = "RDMA device " + n + " port " + std::to_string(spec.port) + " (RINA_IB_HCA)";
        return {};
      }
    }
    std::string have = !probe.built    ? std::string("librina was built without libibverbs")
                       : !probe.listOk ? std::string("ibv_get_device_list failed: ") +
                                             std::strerror(probe.listErrno)
                       : found.empty() ? std::string("no RDMA devices")
                                       : "devices: " + found;
    return errorf(rinaSystemError,
                  "RINA_IB_HCA=%.*s: no such RDMA device (%s); unset RINA_IB_HCA or set "
                  "RINA_IB_DISABLE=1 to use sockets",
                  static_cast<int>(hcaKnob.size()), hcaKnob.data(), have.c_str());
  }
  if (!probe.built) {
    out->notUsed("librina was built without libibverbs");
    return {};
  }
  if (!probe.listOk) {
    out->notUsed(std::string("no RDMA device (ibv_get_device_list: ") +
                 std::strerror(probe.listErrno) + ")");
    return {};
  }
  if (probe.names.empty()) {
    out->notUsed("no RDMA device (ibv_get_device_list found none)");
    return {};
  }
  out->useVerbs = true;
  out->device = probe.names.front();
  out->port = 1;
  out->why = "RDMA device " + out->device + " port 1 (first of: " + found + ")";
  return {};
}

}  // namespace rina::transport::verbs
