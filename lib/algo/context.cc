#include "algo/context.h"

#include <cstdlib>

namespace rina::algo {

Context::~Context() { std::free(scratch_); }

transport::Connection* Context::peer(int r) const {
  auto it = conns_.find(r);
  return it == conns_.end() ? nullptr : it->second.get();
}

transport::Connection* Context::connectionFor(int r, int spine) const {
  if (spine >= 0) {
    auto it = spineConns_.find({r, spine});
    if (it != spineConns_.end()) return it->second.get();
  }
  return peer(r);
}

int Context::defaultSpine(int r) const {
  if (r < 0 || r >= static_cast<int>(defaultSpines_.size())) return -1;
  return defaultSpines_[r];
}

char* Context::scratch(size_t bytes) {
  if (bytes > scratchBytes_) {
    std::free(scratch_);
    scratchBytes_ = (bytes + 63) & ~size_t{63};
    scratch_ = static_cast<char*>(std::aligned_alloc(64, scratchBytes_));
    if (!scratch_) scratchBytes_ = 0;
  }
  return scratch_;
}

EngineContext contextFor(const Context& ctx, uint8_t kind, uint64_t seq, int steps) {
  return EngineContext{ctx.rank(),      collectiveName(kind), seq, steps, ctx.timeoutMs(),
                       ctx.abortFlag(), ctx.spinUs()};
}

}  // namespace rina::algo
