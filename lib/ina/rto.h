// Adaptive retransmission timeout (Jacobson/Karels, RFC 6298 constants):
// srtt and rttvar from samples of slices sent once (Karn: never from a
// retransmitted one), rto = srtt + 4 rttvar clamped to [min, max]; each
// timeout doubles it until the next sample.
#ifndef RINA_LIB_INA_RTO_H_
#define RINA_LIB_INA_RTO_H_

#include <algorithm>
#include <cstdint>

namespace rina::ina {

class RtoEstimator {
 public:
  RtoEstimator(int64_t initialUs, int64_t minUs, int64_t maxUs)
      : minUs_(minUs), maxUs_(maxUs), rtoUs_(std::clamp(initialUs, minUs, maxUs)) {}

  void sample(int64_t rttUs) {
    if (srttUs_ < 0) {
      srttUs_ = rttUs;
      rttvarUs_ = rttUs / 2;
    } else {
      int64_t err = rttUs - srttUs_;
      srttUs_ += err / 8;
      rttvarUs_ += ((err < 0 ? -err : err) - rttvarUs_) / 4;
    }
    rtoUs_ = std::clamp(srttUs_ + 4 * rttvarUs_, minUs_, maxUs_);
  }
  void backoff() { rtoUs_ = std::min(maxUs_, 2 * rtoUs_); }
  int64_t rtoUs() const { return rtoUs_; }
  int64_t srttUs() const { return srttUs_; }

 private:
  int64_t minUs_, maxUs_;
  int64_t rtoUs_;
  int64_t srttUs_ = -1;
  int64_t rttvarUs_ = 0;
};

}  // namespace rina::ina

#endif  // RINA_LIB_INA_RTO_H_
