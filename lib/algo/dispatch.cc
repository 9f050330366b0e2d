#include "algo/dispatch.h"

#include <cstring>
#include <string>

#include "algo/auto_select.h"
#include "algo/collectives.h"
#include "core/log.h"
#include "reduce/reduce.h"

namespace rina::algo {

Status allReduce(Communicator& comm, const void* send, void* recv, size_t count,
                 rinaDataType_t type, rinaRedOp_t op) {
  if (comm.size() == 1) {
    if (send != recv) std::memcpy(recv, send, count * reduce::dataTypeSize(type));
    return {};  // avg over one rank is the value itself
  }
  const size_t bytes = count * reduce::dataTypeSize(type);
  Algorithm a = comm.algorithm();
  if (a == Algorithm::kAuto) {
    std::string why;
    a = resolveAuto(comm.racks(), bytes, comm.smallMsgBytes(), &why, comm.portMarkers());
    if (comm.noteAutoChoice(a))
      RINA_INFO("rank %d: auto runs %s (%s)", comm.rank(), algorithmName(a), why.c_str());
  } else if (a == Algorithm::kRing && bytes < comm.smallMsgBytes()) {
    a = Algorithm::kRecursiveDoubling;
  }
  comm.stats().calls[static_cast<int>(a)]++;
  switch (a) {
    case Algorithm::kRecursiveDoubling:
      return recursiveDoublingAllReduce(comm, send, recv, count, type, op);
    case Algorithm::kHier:
      return hierAllReduce(comm, send, recv, count, type, op);
    case Algorithm::kRina:
      return rinaAllReduce(comm, send, recv, count, type, op);
    case Algorithm::kPsIna:
      return psInaAllReduce(comm, send, recv, count, type, op);
    case Algorithm::kRing:
    case Algorithm::kAuto:
      return ringAllReduce(comm, send, recv, count, type, op);
  }
  return errorf(rinaInternalError, "unknown algorithm");
}

}  // namespace rina::algo
