// rinaMemAlloc and rinaMemFree: memory peers on the host can map
// (transport/shared_memory.h). No communicator: a failure is kept for
// rinaCommGetLastError(NULL).
#include "api/call.h"
#include "rina/rina.h"
#include "transport/shared_memory.h"

using rina::errorf;
using rina::Status;
using rina::api::fail;

rinaResult_t rinaMemAlloc(void** ptr, size_t size) {
  if (!ptr) return fail(nullptr, errorf(rinaInvalidArgument, "rinaMemAlloc: ptr is NULL"));
  *ptr = nullptr;
  if (size == 0) return fail(nullptr, errorf(rinaInvalidArgument, "rinaMemAlloc: size is 0"));
  const Status s = rina::transport::allocateSharedMemory(size, ptr);
  return s.ok() ? rinaSuccess : fail(nullptr, s);
}

rinaResult_t rinaMemFree(void* ptr) {
  if (!ptr) return fail(nullptr, errorf(rinaInvalidArgument, "rinaMemFree: ptr is NULL"));
  const Status s = rina::transport::freeSharedMemory(ptr);
  return s.ok() ? rinaSuccess : fail(nullptr, s);
}
