// rinaMemAlloc and rinaMemFree: memory peers on the host can map
// (core/shared_memory.h). No communicator: a failure is kept for
// rinaCommGetLastError(NULL).
#include "api/call.h"
#include "core/shared_memory.h"
#include "rina/rina.h"

using rina::errorf;
using rina::Status;
using rina::api::fail;

rinaResult_t rinaMemAlloc(void** ptr, size_t size) {
  if (!ptr) return fail(nullptr, errorf(rinaInvalidArgument, "rinaMemAlloc: ptr is NULL"));
  *ptr = nullptr;
  if (size == 0) return fail(nullptr, errorf(rinaInvalidArgument, "rinaMemAlloc: size is 0"));
  const Status s = rina::allocateSharedMemory(size, ptr);
  return s.ok() ? rinaSuccess : fail(nullptr, s);
}

rinaResult_t rinaMemFree(void* ptr) {
  if (!ptr) return fail(nullptr, errorf(rinaInvalidArgument, "rinaMemFree: ptr is NULL"));
  const Status s = rina::freeSharedMemory(ptr);
  return s.ok() ? rinaSuccess : fail(nullptr, s);
}
