// Completion status -> an explanation a user can act on. The values are
// those of enum ibv_wc_status (verbs.h); verbs_connection.cc checks that
// they agree at compile time, so this table is built and tested everywhere.
#ifndef RINA_LIB_TRANSPORT_VERBS_WC_STATUS_H_
#define RINA_LIB_TRANSPORT_VERBS_WC_STATUS_H_

#include <string>

namespace rina::transport::verbs {

enum class WcStatus : int {
  kSuccess = 0,
  kLocalLengthError = 1,
  kLocalQpOperationError = 2,
  kLocalEecOperationError = 3,
  kLocalProtectionError = 4,
  kWorkRequestFlushed = 5,
  kMemoryWindowBindError = 6,
  kBadResponse = 7,
  kLocalAccessError = 8,
  kRemoteInvalidRequest = 9,
  kRemoteAccessError = 10,
  kRemoteOperationError = 11,
  kRetryExceeded = 12,
  kRnrRetryExceeded = 13,
  kLocalRddViolation = 14,
  kRemoteInvalidRdRequest = 15,
  kRemoteAborted = 16,
  kInvalidEecn = 17,
  kInvalidEecState = 18,
  kFatal = 19,
  kResponseTimeout = 20,
  kGeneral = 21,
  kTagMatchingError = 22,
  kTmRndvIncomplete = 23,
};

// "retry exceeded (IBV_WC_RETRY_EXC_ERR): the peer did not acknowledge ..."
// Unknown values give "unknown completion status N".
std::string wcStatusText(int status);

// Whether the status reports the peer's side (its adapter refused, or never
// answered): rinaRemoteError. Local failures are rinaSystemError.
bool wcStatusIsRemote(int status);

}  // namespace rina::transport::verbs

#endif  // RINA_LIB_TRANSPORT_VERBS_WC_STATUS_H_
