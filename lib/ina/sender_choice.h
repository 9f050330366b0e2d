// Which backend an INA client sends with (ina_sender.h), as a pure function
// of RINA_INA_TRANSPORT, the RDMA device choice and the switch address, so
// every case is tested without a device.
//
//   udp                              -> UDP
//   auto, RDMA device, remote switch -> RDMA UC
//   auto, otherwise                  -> UDP, and the INFO line says why
//   rdma, RDMA device, remote switch -> RDMA UC
//   rdma, otherwise                  -> an error naming the knob (the user
//                                       asked for RDMA; quietly using UDP
//                                       would hide the problem)
// A loopback switch (RINA_SWITCH=auto starts rina-switchd on 127.0.0.1) is
// one no NIC can reach.
#ifndef RINA_LIB_INA_SENDER_CHOICE_H_
#define RINA_LIB_INA_SENDER_CHOICE_H_

#include <string>
#include <string_view>

#include "core/status.h"

namespace rina::ina {

enum class InaTransport { kUdp, kRdmaUc };

struct RdmaAvailability {
  bool usable = false;  // an RDMA device was chosen (transport/verbs/select.h)
  std::string why;      // that choice's INFO text ("no RDMA device (...)")
};

struct InaTransportChoice {
  InaTransport transport = InaTransport::kUdp;
  bool required = false;  // RINA_INA_TRANSPORT=rdma: a later failure is an error
  std::string why;
};

Status chooseInaTransport(std::string_view knob, const RdmaAvailability& rdma, uint32_t switchAddr,
                          InaTransportChoice* out);

}  // namespace rina::ina

#endif  // RINA_LIB_INA_SENDER_CHOICE_H_
