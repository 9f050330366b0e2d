#include "ina/ctrl_client.h"

#include <cerrno>
#include <cstring>

#include "core/config.h"
#include "ina/local_switchd.h"
#include "wire/ctrl_auth.h"

namespace rina::ina {
namespace {

// Messages show requests with their tokens starred: a token is a job's secret.
std::string contextOf(const Endpoint& controller, const std::string& line) {
  return "ina: controller " + controller.toString() + ", request '" +
         redactTokens(line).substr(0, 40) + "': ";
}

}  // namespace

Status CtrlClient::connect(const Endpoint& controller, int timeoutMs,
                           std::unique_ptr<CtrlClient>* out, const std::string& secretFile) {
  std::string secret;
  std::string file = secretFile;
  if (file.empty()) {
    secret = localSwitchdSecret(controller);
    if (secret.empty()) file = config::environment().switchAuth;
  }
  if (secret.empty() && !file.empty()) {
    std::string error;
    if (!readSecretFile(file, &secret, &error)) {
      return errorf(rinaInvalidUsage, "ina: switch controller %s: secret: %s%s",
                    controller.toString().c_str(), error.c_str(),
                    secretFile.empty() ? " (RINA_SWITCH_AUTH_FILE)" : "");
    }
  }
  Fd fd;
  Status s = connectTcp(controller, timeoutMs, &fd);
  if (!s.ok()) return s.prepend("ina: switch controller " + controller.toString() + ": ");
  out->reset(new CtrlClient(std::move(fd), controller, timeoutMs));
  (*out)->secret_ = std::move(secret);
  return Status();
}

void CtrlClient::keepNotice(const std::string& line) {
  PreemptNotice n;
  if (parsePreemptNotice(line, &n)) notices_.push_back(n);
}

Status CtrlClient::exchange(const std::string& line, const std::string& context,
                            std::string* reply) {
  Status s = sendLine(fd_.get(), line, timeoutMs_);
  if (!s.ok()) return s.prepend(context);
  for (;;) {
    s = readLine(fd_.get(), reader_, timeoutMs_, reply);
    if (!s.ok()) return s.prepend(context);
    if (reply->rfind("NOTICE ", 0) != 0) break;
    keepNotice(*reply);
  }
  return Status();
}

Status CtrlClient::wireForm(const std::string& line, const std::string& context,
                            std::string* wire) {
  *wire = line;
  if (secret_.empty()) return Status();
  if (nonce_.empty()) {
    std::string challenge;
    RINA_TRY(exchange(std::string(kCtrlChallengeVerb), context, &challenge));
    if (!parseChallengeReply(challenge, &nonce_)) {
      return errorf(rinaInvalidUsage,
                    "ina: controller %s does not authenticate requests (started without "
                    "--auth-file?) but a secret is configured for it: '%.80s'",
                    controller_.toString().c_str(), challenge.c_str());
    }
  }
  *wire = signCtrlRequest(secret_, nonce_, ++seq_, line);
  return Status();
}

Status CtrlClient::roundTrip(const std::string& line, std::string* reply) {
  const std::string context = contextOf(controller_, line);
  lastReply_.clear();
  std::string wire;
  RINA_TRY(wireForm(line, context, &wire));
  RINA_TRY(exchange(wire, context, reply));
  lastReply_ = *reply;
  if (reply->rfind("OK", 0) != 0) {
    return errorf(rinaRemoteError, "ina: controller %s refused '%.60s': %s",
                  controller_.toString().c_str(), redactTokens(line).c_str(), reply->c_str());
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

Status CtrlClient::postRelease(uint16_t job, uint64_t token) {
  CtrlRequest r;
  r.verb = CtrlVerb::kRelease;
  r.job = job;
  r.token = token;
  const std::string line = formatCtrlRequest(r);
  const std::string context = contextOf(controller_, line);
  std::string wire;
  RINA_TRY(wireForm(line, context, &wire));
  Status s = sendLine(fd_.get(), wire, timeoutMs_);
  return s.ok() ? s : s.prepend(context);
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
