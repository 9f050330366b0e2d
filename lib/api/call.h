// What every C entry point shares: the handle behind rinaComm_t, the
// argument checks, the bookkeeping of a failure (rinaCommGetLastError), the
// staging of GPU buffers, and the hand-off to the communicator, at once or,
// between rinaGroupStart and rinaGroupEnd, at rinaGroupEnd (group.h).
#ifndef RINA_LIB_API_CALL_H_
#define RINA_LIB_API_CALL_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "comm/communicator.h"
#include "core/status.h"
#include "rina/rina.h"

// A handle is marked live at create and destroyed at destroy, so a call on a
// destroyed communicator is refused with a message; its memory is kept (see
// Quarantine) so that check reads valid memory for the most recent ones.
constexpr uint64_t kLiveComm = 0x4d4d4f43414e4952ull;       // "RINACOMM"
constexpr uint64_t kDestroyedComm = 0x444559525453454dull;  // "MESTRYED"

struct rinaComm {
  uint64_t magic = kLiveComm;
  std::unique_ptr<rina::comm::Communicator> impl;
  // A collective failed mid-way: peers may be at different points of the
  // stream, so later calls would only misread it.
  rinaResult_t broken = rinaSuccess;
  // Held while a call runs, so a shrink from another thread
  // (RINA_SHRINK_ABORT) takes the connections over only once it returned.
  std::mutex running;
  // rinaCommShrink or rinaCommGrow made a new communicator of this one's
  // connections (the C function's name); null: not used up.
  const char* replacedBy = nullptr;
};

namespace rina::api {

using comm::Communicator;

// Null, destroyed or not a handle: an error naming the function; else ok.
Status checkHandle(const rinaComm* comm, const char* fn);
// A communicator made from comm took its connections (rinaCommShrink,
// rinaCommGrow): rinaInvalidUsage naming fn and the call that did; else ok.
Status checkNotUsedUp(const rinaComm* comm, const char* fn);
// Whether calls may run on comm (a live handle): first reads the notices
// that came (a revoke), then refuses a revoked, aborted, used up or failed
// communicator with an error naming its state.
Status checkUsable(rinaComm* comm, const char* fn);
bool live(const rinaComm* comm);
// Keeps s's message for rinaCommGetLastError (comm's, or this thread's
// when comm is null), logs it, and returns its code.
rinaResult_t fail(rinaComm* comm, const Status& s);
// s's code; a failure is kept (fail), and one that is not a bad argument
// marks comm broken (every later call returns it).
rinaResult_t finish(rinaComm* comm, Status s);
// The message of the last failure without a communicator on this thread.
std::string& threadLastError();

// How a collective's GPU buffers reach the host algorithms.
enum class Staging {
  kNone,       // host buffers only
  kWhole,      // copied to pinned host memory, run, copied back
  kPipelined,  // element-wise: in chunks, the copies overlapping the transport
};

// One collective as a C entry point hands it on. The checks, the staging of
// GPU buffers and the bookkeeping of a failure are runCollective's.
struct Collective {
  Collective(const char* name, const void* send, void* recv, size_t count, rinaDataType_t type)
      : name(name), send(send), recv(recv), count(count), type(type) {}

  const char* name;  // the C function, the start of every message
  const void* send;
  void* recv;
  size_t count;  // elements of one part
  rinaDataType_t type;
  std::optional<rinaRedOp_t> op;  // reductions
  size_t sendParts = 1;           // send holds sendParts * count elements
  size_t recvParts = 1;
  std::optional<int> root;  // rooted collectives: a rank of the communicator
  Staging staging = Staging::kWhole;
  bool onStream = false;  // stream-ordered: needs a usable GPU, waits for the stream
  void* stream = nullptr;
};

// The collective on host buffers (the caller's, or staged copies): count
// elements (a chunk's, when pipelined) from send into recv.
using HostRun = std::function<Status(Communicator& c, const void* send, void* recv, size_t count)>;

// The argument checks every collective makes; bytes gets count * element size.
Status checkCollective(rinaComm* comm, const Collective& call, size_t* bytes);

// Every collective's entry: the handle and argument checks, the empty call,
// then (inside a group: at rinaGroupEnd, after the group's messages) GPU
// buffers staged as call.staging says, the run, and a failure kept.
rinaResult_t runCollective(rinaComm* comm, const Collective& call, const HostRun& run);

}  // namespace rina::api

#endif  // RINA_LIB_API_CALL_H_
