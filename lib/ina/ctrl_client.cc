#include "ina/ctrl_client.h"

#include <cerrno>
#include <cstring>

namespace rina::ina {

Status CtrlClient::connect(const Endpoint& controller, int timeoutMs,
                           std::unique_ptr<CtrlClient>* out) {
  Fd fd;
  Status s = connectTcp(controller, timeoutMs, &fd);
  if (!s.ok()) return s.prepend("ina: switch controller " + controller.toString() + ": ");
  out->reset(new CtrlClient(std::move(fd), controller, timeoutMs));
  return Status();
}

void CtrlClient::keepNotice(const std::string& line) {
  PreemptNotice n;
  if (parsePreemptNotice(line, &n)) notices_.push_back(n);
}

Status CtrlClient::roundTrip(const std::string& line, std::string* reply) {
  const std::string context =
      "ina: controller " + controller_.toString() + ", request '" + line.substr(0, 40) + "': ";
  lastReply_.clear();
  Status s = sendLine(fd_.get(), line, timeoutMs_);
  if (!s.ok()) return s.prepend(context);
  for (;;) {
    s = readLine(fd_.get(), reader_, timeoutMs_, reply);
    if (!s.ok()) return s.prepend(context);
    if (reply->rfind("NOTICE ", 0) != 0) break;
    keepNotice(*reply);
  }
  lastReply_ = *reply;
  if (reply->rfind("OK", 0) != 0) {
    return errorf(rinaRemoteError, "ina: controller %s refused '%.60s': %s",
                  controller_.toString().c_str(), line.c_str(), reply->c_str());
  }
  return Status();
}

Status CtrlClient::grantReply(const std::string& line, Grant* grant) {
  std::string reply;
  RINA_TRY(roundTrip(line, &reply));
  if (!parseGrant(reply, grant)) {
    return errorf(rinaRemoteError, "ina: controller %s: malformed grant '%s'",
                  controller_.toString().c_str(), reply.c_str());
  }
  return Status();
}

Status CtrlClient::registerJob(const CtrlRequest& request, Grant* grant, bool* jobTaken) {
  CtrlRequest r = request;
  r.verb = CtrlVerb::kRegister;
  if (jobTaken) *jobTaken = false;
  Status s = grantReply(formatCtrlRequest(r), grant);
  if (!s.ok() && jobTaken) *jobTaken = isTakenReply(lastReply_);
  return s;
}

Status CtrlClient::requestSlots(uint16_t job, uint64_t token, uint32_t slots, Grant* grant) {
  CtrlRequest r;
  r.verb = CtrlVerb::kRequest;
  r.job = job;
  r.token = token;
  r.slots = slots;
  return grantReply(formatCtrlRequest(r), grant);
}

Status CtrlClient::release(uint16_t job, uint64_t token) {
  CtrlRequest r;
  r.verb = CtrlVerb::kRelease;
  r.job = job;
  r.token = token;
  std::string reply;
  return roundTrip(formatCtrlRequest(r), &reply);
}

Status CtrlClient::query(const std::string& line, std::string* reply) {
  RINA_TRY(roundTrip(line, reply));
  reply->erase(0, std::min<size_t>(reply->size(), 3));
  return Status();
}

std::vector<PreemptNotice> CtrlClient::takeNotices() {
  long n;
  while ((n = reader_.fill(fd_.get())) > 0) {
  }
  if (n == 0 || (n < 0 && n != -EAGAIN)) closed_ = true;
  std::string line;
  while (reader_.nextLine(&line)) keepNotice(line);
  return std::exchange(notices_, {});
}

}  // namespace rina::ina
