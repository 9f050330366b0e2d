// When rank 0 re-plans: every RINA_PLAN_INTERVAL collectives ("100") or
// seconds ("5s"; "0" = never on a schedule), and whenever a measured link
// rate dropped by more than RINA_PLAN_THRESHOLD (a fraction; 0.5 = 50%, 0
// = off) below the rate the current plan was made from (a rise waits for
// the interval), looked at every RINA_PLAN_CHECK_EVERY (0.5 s). A pure
// decision: the caller counts collectives, keeps the clock and the rates.
#ifndef RINA_LIB_PLAN_REPLAN_H_
#define RINA_LIB_PLAN_REPLAN_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.h"
#include "core/status.h"

namespace rina::plan {

class ReplanPolicy {
 public:
  struct Decision {
    bool replan = false;
    std::string reason;  // for the plan's reason and the INFO line
  };

  // How often rank 0 looks at the rates and the clock (with a threshold or a
  // time interval) by default (RINA_PLAN_CHECK_EVERY's default, 0.5s): about
  // every half second, whatever a collective takes. A fixed count would
  // notice a moved rate late with long collectives (16 x 200 ms: 3.2 s) and
  // pay a check (a gather of the rates and a notice, ~0.15 ms) too often
  // with short ones.

  // From RINA_PLAN_INTERVAL, RINA_PLAN_THRESHOLD and RINA_PLAN_CHECK_EVERY,
  // parsed and checked by the knob table (core/config.h): interval "N"
  // (collectives), "Ns" / "N.5s" (seconds), "0" (never); threshold a number
  // >= 0; checkEvery a whole number >= 1 of collectives, or "Ns" (a number
  // > 0 of seconds: rank 0 turns it into a count from how long the
  // collectives since the last check took).
  static ReplanPolicy fromOptions(const config::Options& o);
  // The same from their text (checkEvery: its default when left out):
  // anything the table refuses is rinaInvalidArgument naming the knob.
  static Status parse(std::string_view interval, std::string_view threshold, ReplanPolicy* out);
  static Status parse(std::string_view interval, std::string_view threshold,
                      std::string_view checkEvery, ReplanPolicy* out);

  // The check points: after `since` collectives under the current plan, the
  // next count at which a check is due: a multiple of the interval's count,
  // or (with a threshold or a time interval) of checkEvery; 0: never. With
  // checkEvery in seconds, `secondsPerCollective` (0: not known yet) turns
  // it into a count: since + ceil(seconds / secondsPerCollective), at least
  // 1 (the first check after the next collective while nothing is known),
  // at most kMaxCheckEvery.
  uint64_t nextCheck(uint64_t since, double secondsPerCollective = 0) const;
  static constexpr uint64_t kMaxCheckEvery = 1 << 20;

  // collectives / seconds: since the current plan was made. ratesAtPlan /
  // ratesNow: the same links in the same order (a different length means
  // the set of links changed, which is a reason by itself). linkNames
  // (optional, same order): how the reason names a link ("3->5"), else by
  // its index.
  Decision decide(uint64_t collectives, double seconds, const std::vector<double>& ratesAtPlan,
                  const std::vector<double>& ratesNow,
                  const std::vector<std::string>* linkNames = nullptr) const;

  uint64_t everyCollectives() const { return everyCollectives_; }
  double everySeconds() const { return everySeconds_; }
  double threshold() const { return threshold_; }
  uint64_t checkEvery() const { return checkEvery_; }  // 0: in seconds
  double checkEverySeconds() const { return checkEverySeconds_; }

 private:
  uint64_t everyCollectives_ = 0;  // 0: not by count
  double everySeconds_ = 0;        // 0: not by time
  double threshold_ = 0;           // 0: rates never trigger
  uint64_t checkEvery_ = 0;        // the default: in seconds
  double checkEverySeconds_ = 0.5;
};

}  // namespace rina::plan

#endif  // RINA_LIB_PLAN_REPLAN_H_
