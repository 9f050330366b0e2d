// A data plane that does nothing: the control-plane fuzz targets drive the
// switch's Controller without a pipeline behind it.
#ifndef RINA_TESTS_FUZZ_NULL_DATA_PLANE_H_
#define RINA_TESTS_FUZZ_NULL_DATA_PLANE_H_

#include <cstdint>
#include <string>

#include "switchd/control.h"

namespace rina::fuzz {

class NullDataPlane : public switchd::DataPlane {
 public:
  void installJob(const switchd::JobEntry&) override {}
  void removeJob(uint16_t) override {}
  void assignSlots(uint32_t, uint32_t, uint16_t) override {}
  uint64_t lastActivityMs(uint16_t) const override { return 0; }
  std::string countersJson() const override { return "{}"; }
};

}  // namespace rina::fuzz

#endif  // RINA_TESTS_FUZZ_NULL_DATA_PLANE_H_
