#include "ina/sender_choice.h"

#include "wire/endpoint.h"

namespace rina::ina {

Status chooseInaTransport(std::string_view knob, const RdmaAvailability& rdma, uint32_t switchAddr,
                          InaTransportChoice* out) {
  *out = InaTransportChoice();
  if (knob != "auto" && knob != "udp" && knob != "rdma") {
    return errorf(rinaInvalidArgument, "RINA_INA_TRANSPORT=%.*s: give auto, udp or rdma",
                  static_cast<int>(knob.size()), knob.data());
  }
  if (knob == "udp") {
    out->why = "RINA_INA_TRANSPORT=udp";
    return {};
  }
  std::string whyNot;
  if (!rdma.usable) {
    whyNot = rdma.why;
  } else if ((switchAddr >> 24) == 127) {
    whyNot = "the switch " + Endpoint{switchAddr, 0}.addressString() +
             " is on loopback, which no RDMA NIC reaches";
  }
  if (whyNot.empty()) {
    out->transport = InaTransport::kRdmaUc;
    out->required = knob == "rdma";
    out->why = rdma.why;
    return {};
  }
  if (knob == "rdma") {
    return errorf(rinaSystemError,
                  "RINA_INA_TRANSPORT=rdma: cannot send INA over RDMA: %s; unset it (or set udp) "
                  "to use UDP",
                  whyNot.c_str());
  }
  out->why = whyNot;
  return {};
}

}  // namespace rina::ina
