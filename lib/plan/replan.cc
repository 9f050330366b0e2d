#include "plan/replan.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/config.h"

namespace rina::plan {

ReplanPolicy ReplanPolicy::fromOptions(const config::Options& o) {
  ReplanPolicy p;
  if (o.planInterval.inSeconds) {
    p.everySeconds_ = o.planInterval.seconds;
  } else {
    p.everyCollectives_ = o.planInterval.count;
  }
  p.threshold_ = o.planThreshold;
  if (o.planCheckEvery.inSeconds) {
    p.checkEvery_ = 0;
    p.checkEverySeconds_ = o.planCheckEvery.seconds;
  } else {
    p.checkEvery_ = o.planCheckEvery.count;
  }
  return p;
}

Status ReplanPolicy::parse(std::string_view interval, std::string_view threshold,
                           ReplanPolicy* out) {
  return parse(interval, threshold, config::find("RINA_PLAN_CHECK_EVERY")->defaultValue, out);
}

Status ReplanPolicy::parse(std::string_view interval, std::string_view threshold,
                           std::string_view checkEvery, ReplanPolicy* out) {
  config::Options o;
  RINA_TRY(config::set(&o, "RINA_PLAN_INTERVAL", interval));
  RINA_TRY(config::set(&o, "RINA_PLAN_THRESHOLD", threshold));
  RINA_TRY(config::set(&o, "RINA_PLAN_CHECK_EVERY", checkEvery));
  *out = fromOptions(o);
  return {};
}

uint64_t ReplanPolicy::nextCheck(uint64_t since, double secondsPerCollective) const {
  auto nextMultiple = [since](uint64_t k) { return (since / k + 1) * k; };
  uint64_t next = 0;
  if (everyCollectives_ > 0) next = nextMultiple(everyCollectives_);
  if (threshold_ > 0 || everySeconds_ > 0) {
    uint64_t look;
    if (checkEvery_ > 0) {
      look = nextMultiple(checkEvery_);
    } else {
      const double n =
          secondsPerCollective > 0 ? std::ceil(checkEverySeconds_ / secondsPerCollective) : 1.0;
      look = since + static_cast<uint64_t>(std::clamp(n, 1.0, static_cast<double>(kMaxCheckEvery)));
    }
    next = next ? std::min(next, look) : look;
  }
  return next;
}

ReplanPolicy::Decision ReplanPolicy::decide(uint64_t collectives, double seconds,
                                            const std::vector<double>& ratesAtPlan,
                                            const std::vector<double>& ratesNow,
                                            const std::vector<std::string>* linkNames) const {
  if (ratesAtPlan.size() != ratesNow.size()) {
    return {true, "the measured links changed (" + std::to_string(ratesAtPlan.size()) + " -> " +
                      std::to_string(ratesNow.size()) + ")"};
  }
  if (threshold_ > 0) {
    // The largest relative drop decides, so the reason names the worst
    // link. Only drops (and a first measurement): a link that got faster
    // cannot slow the plan in use (the next interval re-plan takes it), and
    // a measured rise is more often a burst read out of a socket buffer
    // than a faster link.
    double worst = 0;
    size_t which = 0;
    for (size_t i = 0; i < ratesNow.size(); ++i) {
      double then = ratesAtPlan[i], now = ratesNow[i];
      double move = then > 0 ? (now < then ? (then - now) / then : 0) : (now > 0 ? INFINITY : 0);
      if (move > worst) worst = move, which = i;
    }
    if (worst > threshold_) {
      const std::string name =
          linkNames && which < linkNames->size() ? (*linkNames)[which] : std::to_string(which);
      char buf[200];
      std::snprintf(
          buf, sizeof buf, "link %s moved %.0f -> %.0f Mbit/s (%+.0f%%, threshold %.0f%%)",
          name.c_str(), ratesAtPlan[which], ratesNow[which],
          ratesAtPlan[which] > 0 ? 100.0 * (ratesNow[which] / ratesAtPlan[which] - 1) : 100.0,
          100.0 * threshold_);
      return {true, buf};
    }
  }
  if (everyCollectives_ > 0 && collectives >= everyCollectives_) {
    return {true, std::to_string(collectives) + " collectives since the last plan (interval " +
                      std::to_string(everyCollectives_) + ")"};
  }
  if (everySeconds_ > 0 && seconds >= everySeconds_) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%.1f s since the last plan (interval %gs)", seconds,
                  everySeconds_);
    return {true, buf};
  }
  return {};
}

}  // namespace rina::plan
