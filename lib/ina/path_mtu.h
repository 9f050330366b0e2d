// An INA datagram against the path to the switch: a switch sums whole
// datagrams and cannot parse IP fragments (and one lost fragment loses the
// datagram), so a datagram must fit one IPv4 packet on every worker's path.
#ifndef RINA_LIB_INA_PATH_MTU_H_
#define RINA_LIB_INA_PATH_MTU_H_

#include <cstddef>
#include <cstdint>

namespace rina::ina {

// The MTU of this host's route towards addr (IP_MTU of a UDP socket
// connected to it: the outgoing interface's, or a smaller one learnt for the
// path; at most 65535); 0 when unknown.
uint32_t pathMtuTowards(uint32_t addr);
// Bytes an INA datagram of payloadElems elements takes in one IPv4 packet:
// IP 20 + UDP 8 + INA header 24 + 4 per element.
size_t inaDatagramIpBytes(uint32_t payloadElems);
// The most payload elements an INA datagram may carry on a path of this MTU.
uint32_t payloadElemsFitting(uint32_t mtu);

}  // namespace rina::ina

#endif  // RINA_LIB_INA_PATH_MTU_H_
