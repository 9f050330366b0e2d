#include "perf/rina_algorithm.h"

#include "perf/dtype.h"
#include "perf/rank_group.h"

namespace rina::perf {
namespace {

class RinaAlgorithm final : public AllreduceAlgorithm {
 public:
  RinaAlgorithm(rinaComm_t comm, std::string name) : comm_(comm), name_(std::move(name)) {}

  const std::string& name() const override { return name_; }
  std::string unsupportedReason(rinaDataType_t, rinaRedOp_t) const override { return ""; }

  void select() override {
    checkRina(rinaCommSetAlgorithm(comm_, name_.c_str()), comm_,
              "rinaCommSetAlgorithm(\"" + name_ + "\")");
  }

  void run(const void* sendbuff, void* recvbuff, size_t count, rinaDataType_t type,
           rinaRedOp_t op) override {
    const rinaResult_t result = rinaAllReduce(sendbuff, recvbuff, count, type, op, comm_);
    if (result != rinaSuccess) {
      checkRina(result, comm_,
                "rinaAllReduce(count " + std::to_string(count) + ", " + typeName(type) + ", " +
                    opName(op) + (sendbuff == recvbuff ? ", in place" : "") + ", algorithm " +
                    name_ + ")");
    }
  }

 private:
  rinaComm_t comm_;
  std::string name_;
};

}  // namespace

void checkRina(rinaResult_t result, rinaComm_t comm, const std::string& call) {
  if (result == rinaSuccess) {
    return;
  }
  const char* detail = rinaCommGetLastError(comm);
  fatal(kExitError, call + " failed: " + rinaGetErrorString(result) +
                        (detail != nullptr && *detail != '\0' ? std::string(": ") + detail : ""));
}

std::unique_ptr<AllreduceAlgorithm> makeRinaAlgorithm(rinaComm_t comm, const std::string& name) {
  auto algorithm = std::make_unique<RinaAlgorithm>(comm, name);
  algorithm->select();
  return algorithm;
}

std::string rinaVersionString() {
  int version = 0;
  checkRina(rinaGetVersion(&version), nullptr, "rinaGetVersion");
  return std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
         std::to_string(version % 100);
}

}  // namespace rina::perf
