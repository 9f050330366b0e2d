#include "switchd/control.h"

#include <algorithm>
#include <cstdio>

#include "wire/ctrl_auth.h"

namespace rina::switchd {

using ina::CtrlRequest;
using ina::CtrlVerb;

Controller::Controller(const ControllerOptions& options, DataPlane& dataPlane)
    : options_(options), dataPlane_(dataPlane), allocator_(options.totalSlots) {}

std::string Controller::refuse(const std::string& why) {
  stats_.rejected++;
  return "ERR " + why;
}

bool Controller::idle(uint16_t job, uint64_t nowMs) const {
  auto it = jobs_.find(job);
  uint64_t last =
      std::max(dataPlane_.lastActivityMs(job), it == jobs_.end() ? 0 : it->second.lastGrantMs);
  return nowMs > last && nowMs - last > options_.idleThresholdMs;
}

std::string Controller::handle(std::string_view line, uint64_t nowMs,
                               std::vector<ina::PreemptNotice>* notices, uint16_t* registered,
                               bool authenticated) {
  if (registered) *registered = 0;
  CtrlRequest req;
  std::string error;
  if (!ina::parseCtrlRequest(line, &req, &error)) return refuse(error);
  if (!authenticated) {
    const bool admin = req.verb == CtrlVerb::kRegister || req.verb == CtrlVerb::kRelease ||
                       req.verb == CtrlVerb::kEntries;
    const char* verb = req.verb == CtrlVerb::kRegister  ? "REGISTER"
                       : req.verb == CtrlVerb::kRelease ? "RELEASE"
                                                        : "ENTRIES";
    if (options_.authRequired && admin) {
      stats_.unauthenticated++;
      return refuse(std::string(ina::kCtrlAuthRefusal.substr(4)) + " " + verb +
                    " needs the switch's secret (--auth-file)");
    }
    if (req.verb == CtrlVerb::kRegister && req.priority > options_.priorityCap) {
      stats_.unauthenticated++;
      return refuse(std::string(ina::kCtrlAuthRefusal.substr(4)) + " priority " +
                    std::to_string(req.priority) + " is above the switch's cap " +
                    std::to_string(options_.priorityCap) +
                    (options_.authRequired ? "" : " (and it has no --auth-file)"));
    }
  }
  if (req.verb == CtrlVerb::kStats) return "OK " + statsJson(nowMs);
  auto it = jobs_.find(req.job);
  if (req.verb == CtrlVerb::kEntries) {
    if (it == jobs_.end()) return refuse("unknown job " + std::to_string(req.job));
    return "OK " + entriesJson(req.job);
  }
  if (req.verb == CtrlVerb::kRegister) {
    // Each member gets every result and broadcast once: an address listed
    // twice would multiply them.
    for (size_t a = 0; a < req.members.size(); ++a) {
      for (size_t b = a + 1; b < req.members.size(); ++b) {
        if (req.members[a] == req.members[b]) {
          return refuse("members lists " + req.members[a].toString() + " twice");
        }
      }
    }
    if (it != jobs_.end() && it->second.config.token != req.token) {
      stats_.rejected++;
      return std::string(ina::kCtrlTakenReply) + " job=" + std::to_string(req.job) +
             " is registered with another token";
    }
    stats_.registrations++;
    Job& job = jobs_[req.job];
    job.config = req;
    JobEntry entry{req.job, req.token, req.fanIn, req.members};
    dataPlane_.installJob(entry);
    if (registered) *registered = req.job;
    return grant(job, req.slots, nowMs, notices);
  }
  if (it == jobs_.end()) return refuse("unknown job " + std::to_string(req.job));
  if (it->second.config.token != req.token) {
    return refuse("wrong token for job " + std::to_string(req.job));
  }
  if (req.verb == CtrlVerb::kRequest) return grant(it->second, req.slots, nowMs, notices);
  // RELEASE
  allocator_.release(req.job);
  dataPlane_.removeJob(req.job);
  jobs_.erase(it);
  stats_.releases++;
  return "OK";
}

std::string Controller::grant(Job& job, uint32_t wanted, uint64_t nowMs,
                              std::vector<ina::PreemptNotice>* notices) {
  const uint16_t id = job.config.job;
  const uint8_t priority = job.config.priority;
  job.wanted = wanted;
  // The job's current slots, to free in the data plane if the new window moves.
  std::vector<SlotRange> old;
  for (uint32_t s = 0; s < allocator_.total(); ++s) {
    if (allocator_.owner(s) != id) continue;
    if (!old.empty() && old.back().end == s) {
      old.back().end++;
    } else {
      old.push_back({s, s + 1});
    }
  }
  auto cost = [&](uint16_t owner) -> int {
    if (idle(owner, nowMs)) return 1;
    auto v = jobs_.find(owner);
    if (v != jobs_.end() && v->second.config.priority < priority) {
      return 2 + v->second.config.priority;
    }
    return -1;
  };
  std::vector<Preemption> taken;
  SlotRange g = allocator_.allocate(id, wanted, cost, &taken);
  for (const SlotRange& r : old) dataPlane_.assignSlots(r.begin, r.end, 0);
  if (g.size() > 0) dataPlane_.assignSlots(g.begin, g.end, id);
  for (const Preemption& p : taken) {
    stats_.preemptions++;
    stats_.preemptedSlots += p.range.size();
    notices->push_back({p.job, p.range.begin, p.range.size()});
  }
  stats_.grants++;
  stats_.grantedSlots += g.size();
  job.lastGrantMs = nowMs;
  return ina::formatGrant(
      {id, g.begin, g.size(), options_.payloadElems, options_.dataPort, options_.dataPorts});
}

std::string Controller::statsJson(uint64_t nowMs) const {
  uint32_t used = allocator_.total() - allocator_.freeSlots();
  char buf[512];
  snprintf(buf, sizeof buf,
           "{\"slots_total\":%u,\"slots_used\":%u,\"slot_utilisation\":%.4f,\"registrations\":%llu,"
           "\"grants\":%llu,\"granted_slots\":%llu,\"preemptions\":%llu,\"preempted_slots\":%llu,"
           "\"releases\":%llu,\"rejected\":%llu,\"unauthenticated\":%llu,\"auth\":%s,\"jobs\":[",
           allocator_.total(), used, allocator_.total() ? double(used) / allocator_.total() : 0.0,
           (unsigned long long)stats_.registrations, (unsigned long long)stats_.grants,
           (unsigned long long)stats_.grantedSlots, (unsigned long long)stats_.preemptions,
           (unsigned long long)stats_.preemptedSlots, (unsigned long long)stats_.releases,
           (unsigned long long)stats_.rejected, (unsigned long long)stats_.unauthenticated,
           options_.authRequired ? "true" : "false");
  std::string json = buf;
  bool first = true;
  for (const auto& [id, job] : jobs_) {
    snprintf(buf, sizeof buf,
             "%s{\"job\":%u,\"priority\":%u,\"fanin\":%u,\"slots\":%u,\"wanted\":%u,\"idle\":%s}",
             first ? "" : ",", id, job.config.priority, job.config.fanIn, allocator_.ownedBy(id),
             job.wanted, idle(id, nowMs) ? "true" : "false");
    json += buf;
    first = false;
  }
  json += "],\"dataplane\":" + dataPlane_.countersJson() + "}";
  return json;
}

std::string Controller::entriesJson(uint16_t id) const {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return "";
  const CtrlRequest& c = it->second.config;
  // The slots the job owns now, as ranges (after preemption there may be several).
  std::string ranges;
  uint32_t runStart = 0;
  bool inRun = false;
  for (uint32_t s = 0; s <= allocator_.total(); ++s) {
    bool mine = s < allocator_.total() && allocator_.owner(s) == id;
    if (mine && !inRun) {
      runStart = s;
      inRun = true;
    } else if (!mine && inRun) {
      inRun = false;
      ranges += (ranges.empty() ? "" : ",") +
                std::string("{\"register\":\"RinaIngress.slot_owner\",\"index\":[") +
                std::to_string(runStart) + "," + std::to_string(s) +
                "],\"value\":" + std::to_string(id) + "}";
    }
  }
  char buf[256];
  snprintf(
      buf, sizeof buf,
      "{\"job\":%u,\"tables\":[{\"table\":\"RinaIngress.job_table\",\"match\":{\"hdr.ina.job\":%u},"
      "\"action\":\"RinaIngress.set_job\",\"params\":{\"token_hi\":%u,\"token_lo\":%u,"
      "\"fan_in\":%u,\"mcast_grp\":%u}}",
      id, id, static_cast<unsigned>(c.token >> 32), static_cast<unsigned>(c.token & 0xFFFFFFFFu),
      c.fanIn, id);
  std::string json = buf;
  // The source check: a worker's contributions count only from its endpoint.
  for (size_t w = 0; w < c.members.size(); ++w) {
    snprintf(buf, sizeof buf,
             ",{\"table\":\"RinaIngress.source_table\",\"match\":{\"hdr.ina.job\":%u,"
             "\"hdr.ina.worker\":%zu},\"action\":\"RinaIngress.set_source\",\"params\":{"
             "\"src_addr\":\"%s\",\"src_port\":%u}}",
             id, w, c.members[w].addressString().c_str(), c.members[w].port);
    json += buf;
  }
  for (size_t w = 0; w < c.members.size(); ++w) {
    snprintf(
        buf, sizeof buf,
        ",{\"table\":\"RinaEgress.member_table\",\"match\":{\"mcast_grp\":%u,\"egress_rid\":%zu},"
        "\"action\":\"RinaEgress.set_member\",\"params\":{\"dst_addr\":\"%s\",\"dst_port\":%u}}",
        id, w, c.members[w].addressString().c_str(), c.members[w].port);
    json += buf;
  }
  json += "],\"registers\":[" + ranges +
          "],\"multicast_groups\":[{\"group\":" + std::to_string(id) + ",\"members\":[";
  for (size_t w = 0; w < c.members.size(); ++w) {
    snprintf(buf, sizeof buf, "%s{\"rid\":%zu,\"endpoint\":\"%s\"}", w ? "," : "", w,
             c.members[w].toString().c_str());
    json += buf;
  }
  json += "]}]}";
  return json;
}

}  // namespace rina::switchd
