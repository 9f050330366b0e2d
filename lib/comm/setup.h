// What the set-up steps of Communicator::create (setup.cc) hand on to later
// ones. It lives until create returns: the bootstrap root a rank serves
// under RINA_COMM_ID, the CPU placement of the set-up thread, and when each
// part of set-up ended (logReady says where the time went).
#ifndef RINA_LIB_COMM_SETUP_H_
#define RINA_LIB_COMM_SETUP_H_

#include <memory>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "comm/communicator.h"
#include "core/socket.h"
#include "plan/path_choice.h"
#include "plan/replan.h"
#include "topo/thread_placement.h"

namespace rina::comm {

struct Communicator::Setup {
  Clock::time_point started = Clock::now();
  // readKnobs
  plan::ReplanPolicy policy;
  plan::PathPolicy pathPolicy = plan::PathPolicy::kPlanned;
  int socketsPerPeer = 1;  // 0: auto
  // joinBootstrap
  bootstrap::IdData id{};
  std::string secret;                            // RINA_COMM_SECRET_FILE's; empty: none
  std::unique_ptr<bootstrap::RootService> root;  // rank 0 under RINA_COMM_ID
  // openListeners
  std::string ifname;
  std::unique_ptr<topo::ThreadBinding> placement;  // restores the thread's mask when dropped
  Fd listen;
  std::vector<Fd> spineListen;
  bootstrap::PeerInfo mine{};
  // meet: every rank's PeerInfo; when it began (config and listening done)
  // and ended
  std::vector<bootstrap::PeerInfo> table;
  bootstrap::SegmentOffer segmentOffer{};  // a grow's members' host segment, to join
  Clock::time_point listening;
  Clock::time_point met;
  // connectPeers: when the connections and the host segment were made
  Clock::time_point connected;
};

}  // namespace rina::comm

#endif  // RINA_LIB_COMM_SETUP_H_
