// The state of one rack all-gather (InaClient::startGather, ina_gather.cc);
// private to lib/ina, shared by the two files that hold the client.
#ifndef RINA_LIB_INA_GATHER_CALL_H_
#define RINA_LIB_INA_GATHER_CALL_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include "ina/ina_client.h"

namespace rina::ina {

struct InaClient::GatherCall {
  struct Own {
    uint32_t j = 0;
    bool busy = false;
    bool retransmitted = false;
    std::chrono::steady_clock::time_point sentAt;
    std::vector<uint8_t> bytes;
  };
  uint8_t* buffer = nullptr;
  const std::vector<GatherSlice>* slices = nullptr;
  std::function<bool(uint32_t)> ready;
  uint32_t n = 1, me = 0, share = 1, base = 0, span = 0;
  uint32_t slot0 = 0;                         // first window index of the gather's slots
  std::vector<std::vector<uint32_t>> byRoot;  // slice indices of each root, in order
  std::vector<bool> have;                     // per slice: in the buffer here
  uint32_t nextOwn = 0, ownEchoed = 0;
  std::vector<Own> window;  // share entries, by j % share
  std::chrono::steady_clock::time_point lastEcho;
  InaCallStats stats;
  std::vector<int32_t> words;

  uint32_t slotOf(uint32_t grantBase, uint32_t w, uint32_t j) const {
    return grantBase + slot0 + w * share + j % share;
  }
  size_t own() const { return byRoot[me].size(); }
};

}  // namespace rina::ina

#endif  // RINA_LIB_INA_GATHER_CALL_H_
