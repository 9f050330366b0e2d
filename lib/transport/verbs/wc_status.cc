#include "transport/verbs/wc_status.h"

namespace rina::transport::verbs {
namespace {

struct Explanation {
  const char* name;
  const char* text;
};

constexpr Explanation kTable[] = {
    {"IBV_WC_SUCCESS", "success"},
    {"IBV_WC_LOC_LEN_ERR", "local length error: a message was longer than the receive buffer"},
    {"IBV_WC_LOC_QP_OP_ERR", "local QP operation error: a malformed work request (rina bug)"},
    {"IBV_WC_LOC_EEC_OP_ERR", "local EE context operation error"},
    {"IBV_WC_LOC_PROT_ERR",
     "local protection error: a buffer outside its memory registration or lkey"},
    {"IBV_WC_WR_FLUSH_ERR",
     "work request flushed: the queue pair had already failed (see the first error)"},
    {"IBV_WC_MW_BIND_ERR", "memory window bind error"},
    {"IBV_WC_BAD_RESP_ERR", "bad response from the peer's adapter"},
    {"IBV_WC_LOC_ACCESS_ERR", "local access error: registration lacks the needed access rights"},
    {"IBV_WC_REM_INV_REQ_ERR",
     "remote invalid request: the peer rejected the operation (length or opcode)"},
    {"IBV_WC_REM_ACCESS_ERR",
     "remote access error: the peer's rkey or address range is wrong (ring not registered, or "
     "the peer already closed it)"},
    {"IBV_WC_REM_OP_ERR", "remote operation error: the peer could not complete the operation"},
    {"IBV_WC_RETRY_EXC_ERR",
     "retry exceeded: the peer did not acknowledge within RINA_IB_TIMEOUT x retries (peer dead, "
     "link down, wrong GID/LID: check RINA_IB_GID_INDEX, or a lossy RoCE fabric without PFC)"},
    {"IBV_WC_RNR_RETRY_EXC_ERR",
     "receiver-not-ready retry exceeded: the peer had no receive posted for a write with "
     "immediate"},
    {"IBV_WC_LOC_RDD_VIOL_ERR", "local RDD violation"},
    {"IBV_WC_REM_INV_RD_REQ_ERR", "remote invalid RD request"},
    {"IBV_WC_REM_ABORT_ERR", "remote aborted the operation"},
    {"IBV_WC_INV_EECN_ERR", "invalid EE context number"},
    {"IBV_WC_INV_EEC_STATE_ERR", "invalid EE context state"},
    {"IBV_WC_FATAL_ERR", "fatal adapter error"},
    {"IBV_WC_RESP_TIMEOUT_ERR", "response timeout"},
    {"IBV_WC_GENERAL_ERR", "general error reported by the adapter"},
    {"IBV_WC_TM_ERR", "tag matching error"},
    {"IBV_WC_TM_RNDV_INCOMPLETE", "tag matching rendezvous incomplete"},
};

}  // namespace

std::string wcStatusText(int status) {
  constexpr int n = static_cast<int>(sizeof(kTable) / sizeof(kTable[0]));
  if (status < 0 || status >= n) return "unknown completion status " + std::to_string(status);
  const Explanation& e = kTable[status];
  return std::string(e.text) + " (" + e.name + ")";
}

bool wcStatusIsRemote(int status) {
  switch (static_cast<WcStatus>(status)) {
    case WcStatus::kBadResponse:
    case WcStatus::kRemoteInvalidRequest:
    case WcStatus::kRemoteAccessError:
    case WcStatus::kRemoteOperationError:
    case WcStatus::kRetryExceeded:
    case WcStatus::kRnrRetryExceeded:
    case WcStatus::kRemoteInvalidRdRequest:
    case WcStatus::kRemoteAborted:
    case WcStatus::kResponseTimeout:
      return true;
    default:
      return false;
  }
}

}  // namespace rina::transport::verbs
