// rinaGroupStart / rinaGroupEnd, NCCL's semantics: between them (on one
// thread, nesting counted) calls only post: point-to-point messages and
// collectives are checked and kept, nothing moves. At the outermost
// rinaGroupEnd the messages of each communicator run together, all peers at
// once (algo/p2p/point_to_point.h: a ring of sends and receives, or two ranks
// that both send first, cannot deadlock), communicators in the order of
// their ids (the same on every rank); then the group's collectives run, in
// the order they were posted.
#ifndef RINA_LIB_API_GROUP_H_
#define RINA_LIB_API_GROUP_H_

#include <functional>

#include "algo/p2p/message.h"
#include "api/call.h"
#include "rina/rina.h"

namespace rina::api {

// This thread is between rinaGroupStart and rinaGroupEnd.
bool inGroup();
// A checked collective, run at rinaGroupEnd after the group's messages.
void deferCall(rinaComm* comm, std::function<rinaResult_t()> run);
// A checked message of the group (name: the C call, for errors); for a
// receive, *source (when not null) gets the sender at rinaGroupEnd.
void deferMessage(rinaComm* comm, const char* name, const algo::Message& m, int* source);

rinaResult_t groupStart();
rinaResult_t groupEnd();

}  // namespace rina::api

#endif  // RINA_LIB_API_GROUP_H_
