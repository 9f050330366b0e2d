// This rank's addresses on the spines (several paths between racks), read
// at communicator creation to listen on each.
#ifndef RINA_LIB_COMM_SPINE_ADDRESSES_H_
#define RINA_LIB_COMM_SPINE_ADDRESSES_H_

#include <string>
#include <vector>

#include "core/status.h"

namespace rina::comm {

// This rank's address on each spine: list (RINA_SPINE_ADDRS,
// "ipv4,ipv4,...", spine order), else the spine_addrs of the host named
// `hostname` in topoFile (RINA_TOPO_FILE), else none. Bad addresses are
// rinaInvalidArgument naming the knob; *source says where they came from.
Status spineAddresses(const std::string& list, const std::string& topoFile,
                      const std::string& hostname, std::vector<std::string>* out,
                      std::string* source);

}  // namespace rina::comm

#endif  // RINA_LIB_COMM_SPINE_ADDRESSES_H_
