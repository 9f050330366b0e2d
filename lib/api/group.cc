#include "api/group.h"

#include <algorithm>
#include <map>
#include <vector>

namespace rina::api {
namespace {

struct PostedMessage {
  rinaComm* comm;
  const char* name;
  algo::Message msg;
  int* source;
};

struct PostedCall {
  rinaComm* comm;
  std::function<rinaResult_t()> run;
};

struct Group {
  int depth = 0;
  std::vector<PostedMessage> messages;
  std::vector<PostedCall> calls;
};

Group& threadGroup() {
  thread_local Group group;
  return group;
}

}  // namespace

bool inGroup() { return threadGroup().depth > 0; }

void deferCall(rinaComm* comm, std::function<rinaResult_t()> run) {
  threadGroup().calls.push_back(PostedCall{comm, std::move(run)});
}

void deferMessage(rinaComm* comm, const char* name, const algo::Message& m, int* source) {
  threadGroup().messages.push_back(PostedMessage{comm, name, m, source});
}

rinaResult_t groupStart() {
  ++threadGroup().depth;
  return rinaSuccess;
}

rinaResult_t groupEnd() {
  Group& g = threadGroup();
  if (g.depth == 0) {
    return fail(nullptr, errorf(rinaInvalidUsage, "rinaGroupEnd: no rinaGroupStart before it"));
  }
  if (--g.depth > 0) return rinaSuccess;
  std::vector<PostedMessage> messages = std::move(g.messages);
  std::vector<PostedCall> calls = std::move(g.calls);
  g.messages.clear();
  g.calls.clear();

  rinaResult_t first = rinaSuccess;
  auto note = [&first](rinaResult_t rc) {
    if (first == rinaSuccess) first = rc;
  };
  // Each communicator's messages together, communicators by id.
  std::map<uint64_t, std::vector<PostedMessage*>> byComm;
  for (PostedMessage& p : messages) byComm[p.comm->impl->id()].push_back(&p);
  for (auto& [id, posted] : byComm) {
    rinaComm* comm = posted.front()->comm;
    std::lock_guard<std::mutex> running(comm->running);
    const Status usable = checkUsable(comm, posted.front()->name);
    if (!usable.ok()) {
      note(fail(comm, Status(usable).prepend("rinaGroupEnd: ")));
      continue;
    }
    std::vector<algo::Message> batch;
    batch.reserve(posted.size());
    for (const PostedMessage* p : posted) batch.push_back(p->msg);
    Status s = comm->impl->runMessages(std::span<algo::Message>(batch));
    for (size_t i = 0; i < posted.size(); ++i) {
      if (posted[i]->source && !batch[i].send) *posted[i]->source = batch[i].source;
    }
    if (!s.ok()) note(finish(comm, s.prepend("rinaGroupEnd: ")));
  }
  for (PostedCall& c : calls) {
    const rinaResult_t rc = c.run();
    if (rc != rinaSuccess) note(rc);
  }
  return first;
}

}  // namespace rina::api
