#include "bmv2/bmv2_data_plane.h"

#include <algorithm>
#include <cstdio>

#include "rina/ina_wire.h"
#include "switchd/pipeline.h"
#include "wire/endpoint.h"

namespace rina::bmv2 {
namespace {

constexpr const char* kJobTable = "RinaIngress.job_table";
constexpr const char* kSourceTable = "RinaIngress.source_table";
constexpr const char* kMemberTable = "RinaEgress.member_table";
constexpr const char* kNeighborTable = "RinaEgress.neighbor_table";
constexpr const char* kVerdicts = "RinaIngress.verdicts";
constexpr const char* kMalformed = "RinaIngress.malformed";
constexpr const char* kActivity = "RinaIngress.job_activity";

}  // namespace

Bmv2DataPlane::Bmv2DataPlane(RuntimeCli& cli, Bmv2DataPlaneOptions options)
    : cli_(cli), options_(std::move(options)), owner_(options_.totalSlots, 0) {}

void Bmv2DataPlane::fail(const Status& s) const {
  if (options_.onFailure) {
    options_.onFailure(s);
  } else {
    fprintf(stderr, "rina bmv2: %s\n", s.message().c_str());
  }
}

Status Bmv2DataPlane::run(const std::vector<std::string>& commands,
                          std::vector<std::string>* outputs) const {
  return cli_.run(commands, outputs);
}

Status Bmv2DataPlane::prepare() {
  if (options_.totalSlots == 0 || options_.totalSlots > kProgramSlots) {
    return errorf(rinaInvalidArgument, "bmv2: %u slots; the program has 1 to %u",
                  options_.totalSlots, kProgramSlots);
  }
  // The program's registers exist and are large enough: reads of the last
  // slot, set and payload element.
  std::vector<std::string> probes = {
      "register_read RinaIngress.slot_owner " + std::to_string(options_.totalSlots - 1),
      "register_read RinaIngress.slot_used " + std::to_string(2 * options_.totalSlots - 1),
      "register_read RinaIngress.slot_value_" + std::to_string(kProgramPayloadElems - 1) + " 0",
      "counter_read " + std::string(kVerdicts) + " " +
          std::to_string(static_cast<int>(switchd::Verdict::kCount) - 1),
      "counter_read " + std::string(kMalformed) + " " +
          std::to_string(static_cast<int>(ina::DecodeError::kCount) - 1)};
  if (Status s = run(probes, nullptr); !s.ok()) {
    return s.prepend("bmv2: the switch does not run rina_v1model.p4 (" +
                     std::to_string(options_.totalSlots) + " slots, " +
                     std::to_string(kProgramPayloadElems) + " elements): ");
  }
  // Tables, registers and counters as at the program's start (the
  // multicast engine keeps its groups: a controller starts with its switch).
  return run({"reset_state"}, nullptr);
}

Status Bmv2DataPlane::install(const switchd::JobEntry& job, InstalledJob* installed) {
  const std::string id = std::to_string(job.id);
  std::vector<std::string> commands;
  std::vector<std::string> tableOf;  // per command: the table it adds to, or ""
  auto add = [&](std::string command, const char* table) {
    commands.push_back(std::move(command));
    tableOf.push_back(table ? table : "");
  };
  add(std::string("table_add ") + kJobTable + " RinaIngress.set_job " + id + " => " +
          std::to_string(job.token >> 32) + " " + std::to_string(job.token & 0xFFFFFFFFu) + " " +
          std::to_string(job.fanIn) + " " + id,
      kJobTable);
  for (size_t w = 0; w < job.members.size(); ++w) {
    const ina::Endpoint& m = job.members[w];
    add(std::string("table_add ") + kSourceTable + " RinaIngress.set_source " + id + " " +
            std::to_string(w) + " => " + m.addressString() + " " + std::to_string(m.port),
        kSourceTable);
    add(std::string("table_add ") + kMemberTable + " RinaEgress.set_member " + id + " " +
            std::to_string(w) + " => " + m.addressString() + " " + std::to_string(m.port),
        kMemberTable);
  }
  add("mc_mgrp_create " + id, nullptr);
  const size_t firstNode = commands.size();
  for (size_t w = 0; w < job.members.size(); ++w) {
    add("mc_node_create " + std::to_string(w) + " " + std::to_string(options_.switchPort), nullptr);
  }
  add(std::string("counter_write ") + kActivity + " " + id + " 0 0", nullptr);
  // Member addresses the neighbor table does not hold yet.
  std::vector<uint32_t> newAddresses;
  // Each address counts once per job (several members may share a host).
  for (const ina::Endpoint& m : job.members) {
    bool seen = false;
    for (uint32_t a : installed->addresses) seen = seen || a == m.addr;
    if (seen) continue;
    installed->addresses.push_back(m.addr);
    auto it = neighborEntries_.find(m.addr);
    if (it != neighborEntries_.end()) {
      it->second.second++;
      continue;
    }
    Mac mac{};
    if (!resolveNeighbor(m.addr, options_.neighbors, options_.resolveWaitMs, &mac)) {
      // Its answers would be dropped (no neighbor entry): the job would only
      // time out. Say which member, and go on without it.
      fprintf(stderr,
              "rina bmv2: no MAC address known for member %s of job %u (not in the neighbor "
              "file, and the kernel did not resolve it): answers to it are dropped\n",
              m.addressString().c_str(), job.id);
      continue;
    }
    newAddresses.push_back(m.addr);
    add(std::string("table_add ") + kNeighborTable + " RinaEgress.set_neighbor " +
            m.addressString() + " => " + macString(mac),
        kNeighborTable);
  }
  std::vector<std::string> outputs;
  RINA_TRY(run(commands, &outputs));
  size_t nextNewAddress = 0;
  for (size_t i = 0; i < commands.size(); ++i) {
    if (!tableOf[i].empty()) {
      long h = parseHandle(outputs[i]);
      if (h < 0) {
        return errorf(rinaRemoteError, "bmv2: no entry handle in the answer to '%s': %s",
                      commands[i].c_str(), outputs[i].c_str());
      }
      if (tableOf[i] == kNeighborTable) {
        neighborEntries_[newAddresses[nextNewAddress++]] = {h, 1};
      } else {
        installed->tableEntries.push_back(h);
        installed->entryTables.push_back(tableOf[i]);
      }
    } else if (i >= firstNode && i < firstNode + job.members.size()) {
      long h = parseHandle(outputs[i]);
      if (h < 0) {
        return errorf(rinaRemoteError, "bmv2: no node handle in the answer to '%s': %s",
                      commands[i].c_str(), outputs[i].c_str());
      }
      installed->nodes.push_back(h);
    }
  }
  // Replicas leave in node order: worker 0 first, as switchd sends them.
  std::vector<std::string> associate;
  for (long node : installed->nodes) {
    associate.push_back("mc_node_associate " + id + " " + std::to_string(node));
  }
  return run(associate, nullptr);
}

Status Bmv2DataPlane::uninstall(uint16_t id, const InstalledJob& installed) {
  std::vector<std::string> commands;
  for (size_t i = 0; i < installed.tableEntries.size(); ++i) {
    commands.push_back("table_delete " + installed.entryTables[i] + " " +
                       std::to_string(installed.tableEntries[i]));
  }
  for (long node : installed.nodes) {
    commands.push_back("mc_node_dissociate " + std::to_string(id) + " " + std::to_string(node));
    commands.push_back("mc_node_destroy " + std::to_string(node));
  }
  commands.push_back("mc_mgrp_destroy " + std::to_string(id));
  for (uint32_t addr : installed.addresses) {
    auto it = neighborEntries_.find(addr);
    if (it == neighborEntries_.end() || --it->second.second > 0) continue;
    commands.push_back(std::string("table_delete ") + kNeighborTable + " " +
                       std::to_string(it->second.first));
    neighborEntries_.erase(it);
  }
  return run(commands, nullptr);
}

void Bmv2DataPlane::installJob(const switchd::JobEntry& job) {
  // A job registering again (its own token) replaces its entries.
  if (auto it = jobs_.find(job.id); it != jobs_.end()) {
    InstalledJob old = std::move(it->second);
    jobs_.erase(it);
    if (Status s = uninstall(job.id, old); !s.ok()) return fail(s);
  }
  InstalledJob installed;
  Status s = install(job, &installed);
  jobs_[job.id] = std::move(installed);
  activity_.erase(job.id);
  if (!s.ok()) fail(s.prepend("job " + std::to_string(job.id) + ": "));
}

void Bmv2DataPlane::removeJob(uint16_t job) {
  std::vector<std::string> commands;
  for (uint32_t s = 0; s < owner_.size(); ++s) {
    if (owner_[s] != job) continue;
    owner_[s] = 0;
    commands.push_back("register_write RinaIngress.slot_owner " + std::to_string(s) + " 0");
  }
  if (Status s = run(commands, nullptr); !s.ok()) return fail(s);
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return;
  InstalledJob installed = std::move(it->second);
  jobs_.erase(it);
  activity_.erase(job);
  if (Status s = uninstall(job, installed); !s.ok()) fail(s);
}

void Bmv2DataPlane::assignSlots(uint32_t begin, uint32_t end, uint16_t job) {
  end = std::min(end, options_.totalSlots);
  std::vector<std::string> commands;
  for (uint32_t s = begin; s < end; ++s) {
    owner_[s] = job;
    commands.push_back("register_write RinaIngress.slot_owner " + std::to_string(s) + " " +
                       std::to_string(job));
    commands.push_back("register_write RinaIngress.slot_used " + std::to_string(2 * s) + " 0");
    commands.push_back("register_write RinaIngress.slot_used " + std::to_string(2 * s + 1) + " 0");
  }
  if (Status s = run(commands, nullptr); !s.ok()) fail(s);
}

uint64_t Bmv2DataPlane::lastActivityMs(uint16_t job) const {
  const uint64_t now = options_.clockMs ? options_.clockMs() : 0;
  Activity& a = activity_[job];
  if (a.packets >= 0 && now - a.readMs < options_.activityRefreshMs) return a.changedMs;
  std::string out;
  long long packets = -1;
  if (Status s =
          cli_.run(std::string("counter_read ") + kActivity + " " + std::to_string(job), &out);
      !s.ok() || (packets = parseCounterPackets(out)) < 0) {
    if (!s.ok()) fail(s);
    return now;  // unknown: busy, never preempted for idleness
  }
  // A count seen for the first time moved at some unknown moment: now.
  if (packets != a.packets && (a.packets >= 0 || packets > 0)) a.changedMs = now;
  a.packets = packets;
  a.readMs = now;
  return a.changedMs;
}

Status Bmv2DataPlane::readCounters(std::vector<uint64_t>* verdicts,
                                   std::vector<uint64_t>* malformed) const {
  const size_t nv = static_cast<size_t>(switchd::Verdict::kCount);
  const size_t nm = static_cast<size_t>(ina::DecodeError::kCount);
  std::vector<std::string> commands;
  for (size_t i = 0; i < nv; ++i) {
    commands.push_back(std::string("counter_read ") + kVerdicts + " " + std::to_string(i));
  }
  for (size_t i = 0; i < nm; ++i) {
    commands.push_back(std::string("counter_read ") + kMalformed + " " + std::to_string(i));
  }
  std::vector<std::string> outputs;
  RINA_TRY(run(commands, &outputs));
  verdicts->assign(nv, 0);
  malformed->assign(nm, 0);
  for (size_t i = 0; i < commands.size(); ++i) {
    long long v = parseCounterPackets(outputs[i]);
    if (v < 0) {
      return errorf(rinaRemoteError, "bmv2: no packet count in the answer to '%s': %s",
                    commands[i].c_str(), outputs[i].c_str());
    }
    (i < nv ? (*verdicts)[i] : (*malformed)[i - nv]) = static_cast<uint64_t>(v);
  }
  return {};
}

std::string Bmv2DataPlane::countersJson() const {
  std::vector<uint64_t> verdicts, malformed;
  if (Status s = readCounters(&verdicts, &malformed); !s.ok()) {
    fail(s);
    return "{\"error\":\"the switch did not answer\"}";
  }
  uint64_t received = 0;
  for (uint64_t v : verdicts) received += v;
  std::string json = "{\"received\":" + std::to_string(received);
  for (size_t i = 0; i < verdicts.size(); ++i) {
    json += ",\"" + std::string(switchd::verdictName(static_cast<switchd::Verdict>(i))) +
            "\":" + std::to_string(verdicts[i]);
  }
  for (size_t i = 1; i < malformed.size(); ++i) {
    json += ",\"malformed_" + std::string(ina::decodeErrorName(static_cast<ina::DecodeError>(i))) +
            "\":" + std::to_string(malformed[i]);
  }
  return json + "}";
}

}  // namespace rina::bmv2
