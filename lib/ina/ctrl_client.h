// A CTRL (TCP) client for the switch controller: job registration, slot
// requests, release, and raw queries (STATS, ENTRIES). Preemption notices
// the controller pushes on this connection are kept for takeNotices().
// With the switch's admin secret, every request is signed
// (lib/wire/ctrl_auth.h): one CHALLENGE per connection, then each request
// with a growing counter and its HMAC; the secret never goes on the wire.
#ifndef RINA_LIB_INA_CTRL_CLIENT_H_
#define RINA_LIB_INA_CTRL_CLIENT_H_

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "wire/ctrl_protocol.h"
#include "wire/net.h"

namespace rina::ina {

class CtrlClient {
 public:
  // secretFile: the switch's admin secret file. Empty: the secret of the
  // local switch this process started at that address (RINA_SWITCH=auto),
  // else the file RINA_SWITCH_AUTH_FILE names, else requests go unsigned.
  static Status connect(const Endpoint& controller, int timeoutMs, std::unique_ptr<CtrlClient>* out,
                        const std::string& secretFile = "");

  // REGISTER; a grant of length 0 means no slot is free now (REQUEST later).
  // When the switch refuses because the job id is live under another token
  // (kCtrlTakenReply), *jobTaken (if given) is set: the caller may register
  // under another id or do without the switch; any other failure leaves it
  // false.
  Status registerJob(const CtrlRequest& request, Grant* grant, bool* jobTaken = nullptr);
  Status requestSlots(uint16_t job, uint64_t token, uint32_t slots, Grant* grant);
  Status release(uint16_t job, uint64_t token);
  // RELEASE without waiting for the reply, for a switch that may not answer
  // now (a stopped one takes it when it resumes); the reply is read and
  // dropped with later notices. Make no other request on this connection
  // after it.
  Status postRelease(uint16_t job, uint64_t token);
  // Sends one request line and returns the reply without its "OK " prefix.
  Status query(const std::string& line, std::string* reply);
  // Notices received so far (reads what is already on the socket).
  std::vector<PreemptNotice> takeNotices();
  // Readable when a notice (or the controller's close) arrived, for a
  // caller that waits on it with poll() between takeNotices() calls.
  int fd() const { return fd_.get(); }
  // The controller closed the connection (seen by takeNotices): the switch
  // is gone.
  bool closed() const { return closed_; }

 private:
  CtrlClient(Fd fd, const Endpoint& controller, int timeoutMs)
      : fd_(std::move(fd)), controller_(controller), timeoutMs_(timeoutMs) {}
  Status roundTrip(const std::string& line, std::string* reply);
  // The line as it goes on the wire: signed when a secret is configured
  // (asking this connection's challenge first).
  Status wireForm(const std::string& line, const std::string& context, std::string* wire);
  Status exchange(const std::string& line, const std::string& context, std::string* reply);
  Status grantReply(const std::string& line, Grant* grant);
  void keepNotice(const std::string& line);

  Fd fd_;
  Endpoint controller_;
  int timeoutMs_;
  LineReader reader_;
  std::vector<PreemptNotice> notices_;
  std::string lastReply_;  // the last reply line roundTrip() read
  bool closed_ = false;
  std::string secret_;  // empty: unsigned
  std::string nonce_;   // this connection's challenge, once asked
  uint64_t seq_ = 0;
};

}  // namespace rina::ina

#endif  // RINA_LIB_INA_CTRL_CLIENT_H_
