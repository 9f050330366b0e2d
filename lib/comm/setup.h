// What the set-up steps of Communicator::create (setup.cc) hand on to later
// ones. It lives until create returns: the bootstrap root a rank serves
// under RINA_COMM_ID, and the CPU placement of the set-up thread.
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
  // readKnobs
  plan::ReplanPolicy policy;
  plan::PathPolicy pathPolicy = plan::PathPolicy::kPlanned;
  int socketsPerPeer = 1;  // 0: auto
  // joinBootstrap
  bootstrap::IdData id{};
  std::unique_ptr<bootstrap::RootService> root;  // rank 0 under RINA_COMM_ID
  // openListeners
  std::string ifname;
  std::unique_ptr<topo::ThreadBinding> placement;  // restores the thread's mask when dropped
  Fd listen;
  std::vector<Fd> spineListen;
  bootstrap::PeerInfo mine{};
  // meet: every rank's PeerInfo
  std::vector<bootstrap::PeerInfo> table;
};

}  // namespace rina::comm

#endif  // RINA_LIB_COMM_SETUP_H_
