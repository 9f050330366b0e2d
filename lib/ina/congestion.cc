#include "ina/congestion.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

namespace rina::ina {

void CongestionWindow::reset(const std::vector<uint32_t>& slotsPerPort, bool enabled) {
  enabled_ = enabled;
  ports_.assign(slotsPerPort.size(), Port{});
  for (size_t p = 0; p < ports_.size(); ++p) {
    ports_[p].ceiling = std::max<uint32_t>(1, slotsPerPort[p]);
    ports_[p].window = ports_[p].ceiling;
    noteSmallest(ports_[p].ceiling);
  }
}

uint32_t CongestionWindow::limit(uint32_t p) const {
  const Port& port = ports_[p];
  if (!enabled_) return port.ceiling;
  return std::clamp<uint32_t>(static_cast<uint32_t>(port.window), 1, port.ceiling);
}

void CongestionWindow::done(uint32_t p, bool result) {
  Port& port = ports_[p];
  if (port.inFlight > 0) port.inFlight--;
  // Additive increase: one datagram per window of answers.
  if (result && port.window < port.ceiling) {
    port.window = std::min<double>(port.ceiling, port.window + 1.0 / port.window);
  }
}

bool CongestionWindow::lost(uint32_t p, uint32_t seq, Clock::time_point firstSent,
                            Clock::time_point now, bool timedOut) {
  Port& port = ports_[p];
  if (!enabled_) return false;
  // The same datagram lost again (resent twice): the loss was decided.
  if (seq == port.lastLossSeq && port.sentSinceLoss != UINT32_MAX) return false;
  const bool isolated = port.sentSinceLoss >= limit(p);
  port.sentSinceLoss = 0;
  port.lastLossSeq = seq;
  if (isolated && !timedOut) {
    stats_.isolated++;
    return false;
  }
  // Sent before the last cut: sent under the old window, the same event.
  if (firstSent < port.lastCut) return false;
  port.windowBeforeCut = port.window;
  port.window = std::max(1.0, std::floor(port.window / 2));
  port.lastCut = now;
  port.cutSeq = seq;
  port.cutUndoable = true;
  stats_.cuts++;
  noteSmallest(static_cast<uint32_t>(port.window));
  return true;
}

bool CongestionWindow::spurious(uint32_t p, uint32_t seq) {
  Port& port = ports_[p];
  if (!port.cutUndoable || port.cutSeq != seq) return false;
  port.cutUndoable = false;
  port.window = std::max(port.window, port.windowBeforeCut);
  stats_.undos++;
  return true;
}

void CongestionWindow::noteSmallest(uint32_t w) {
  if (stats_.smallestWindow == 0 || w < stats_.smallestWindow) stats_.smallestWindow = w;
}

Status paceBytesPerSec(std::string_view text, double linkMbit, double* bytesPerSec) {
  *bytesPerSec = 0;
  if (text == "off") return {};
  double mbit = linkMbit;
  if (text != "auto") {
    const std::string s(text);
    char* end = nullptr;
    mbit = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size() || !(mbit > 0) || mbit > 1e7) {
      return errorf(rinaInvalidArgument,
                    "RINA_INA_PACE=%s: expected off, auto or a rate in Mbit/s (above 0)",
                    s.c_str());
    }
  }
  *bytesPerSec = std::max(0.0, mbit) * 1e6 / 8;
  return {};
}

void Pacer::configure(double bytesPerSec, double burstBytes) {
  rate_ = std::max(0.0, bytesPerSec);
  burst_ = std::max(0.0, burstBytes);
  tokens_ = burst_;
  last_ = Clock::now();
}

double Pacer::tokensAt(Clock::time_point now) const {
  const double elapsed = std::chrono::duration<double>(now - last_).count();
  return std::min(burst_, tokens_ + rate_ * std::max(0.0, elapsed));
}

bool Pacer::take(size_t bytes, Clock::time_point now) {
  if (rate_ <= 0) return true;
  const double have = tokensAt(now);
  // A datagram larger than the burst still goes once the bucket is full.
  if (have < static_cast<double>(bytes) && have < burst_) {
    holds_++;
    return false;
  }
  tokens_ = have - static_cast<double>(bytes);
  last_ = now;
  return true;
}

int64_t Pacer::waitUs(size_t bytes, Clock::time_point now) const {
  if (rate_ <= 0) return 0;
  const double have = tokensAt(now);
  const double need = std::min(static_cast<double>(bytes), burst_) - have;
  if (need <= 0) return 0;
  return static_cast<int64_t>(std::ceil(need / rate_ * 1e6));
}

}  // namespace rina::ina
