#include "mpi/comm_registry.h"

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "core/log.h"
#include "mpi/call_filter.h"
#include "mpi/stats.h"

namespace rina::mpi {
namespace {

// Owns every CommState. Communicators are used from any thread under
// MPI_THREAD_MULTIPLE, so the maps are locked; a single state is touched
// only by the thread running a collective on its communicator (MPI forbids
// two at once), and no MPI call is made under the lock.
class Registry {
 public:
  CommState* add(std::unique_ptr<CommState> state) {
    std::lock_guard<std::mutex> lock(mu_);
    state->serial = nextSerial_++;
    CommState* raw = state.get();
    live_.emplace(raw->serial, std::move(state));
    return raw;
  }

  // The communicator is gone: release rina, keep the counters for the report.
  void retire(CommState* state) {
    std::unique_ptr<CommState> owned;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = live_.find(state->serial);
      if (it == live_.end()) return;
      owned = std::move(it->second);
      live_.erase(it);
    }
    destroyRina(*owned);
    std::lock_guard<std::mutex> lock(mu_);
    retired_.push_back({owned->serial, owned->name, owned->size, owned->stats});
  }

  // MPI_Finalize: no collective runs any more.
  void finalize(int worldRank) {
    std::vector<CommReport> reports;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& [serial, state] : live_) {
        destroyRina(*state);
        reports.push_back({serial, state->name, state->size, state->stats});
      }
      reports.insert(reports.end(), retired_.begin(), retired_.end());
    }
    if (statsEnabled() && worldRank == 0) printReports(reports);
  }

 private:
  static void destroyRina(CommState& state) {
    if (state.rina != nullptr) {
      rinaCommDestroy(state.rina);
      state.rina = nullptr;
    }
    if (state.rinaState == CommState::Rina::kReady) state.rinaState = CommState::Rina::kNotCreated;
  }

  std::mutex mu_;
  uint64_t nextSerial_ = 0;
  std::map<uint64_t, std::unique_ptr<CommState>> live_;
  std::vector<CommReport> retired_;
};

Registry& registry() {
  // Never destroyed: MPI may run attribute callbacks during exit.
  static Registry* r = new Registry();
  return *r;
}

int deleteCommState(MPI_Comm, int, void* value, void*) {
  registry().retire(static_cast<CommState*>(value));
  return MPI_SUCCESS;
}

int finalizeAll(MPI_Comm, int, void*, void*) {
  int worldRank = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &worldRank);
  registry().finalize(worldRank);
  return MPI_SUCCESS;
}

std::once_flag keyvalOnce;
int stateKeyval = MPI_KEYVAL_INVALID;

int keyval() {
  std::call_once(keyvalOnce, [] {
    // A duplicated communicator starts without state: rina communicators
    // are not shared between MPI communicators.
    if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, deleteCommState, &stateKeyval, nullptr) !=
        MPI_SUCCESS) {
      stateKeyval = MPI_KEYVAL_INVALID;
    }
  });
  return stateKeyval;
}

std::string commName(MPI_Comm comm, uint64_t serial) {
  char name[MPI_MAX_OBJECT_NAME] = {};
  int length = 0;
  if (PMPI_Comm_get_name(comm, name, &length) == MPI_SUCCESS && length > 0) {
    return std::string(name, static_cast<size_t>(length));
  }
  return "comm#" + std::to_string(serial);
}

}  // namespace

void installFinalizeHook() {
  static std::once_flag once;
  std::call_once(once, [] {
    int selfKeyval = MPI_KEYVAL_INVALID;
    if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, finalizeAll, &selfKeyval, nullptr) !=
            MPI_SUCCESS ||
        PMPI_Comm_set_attr(MPI_COMM_SELF, selfKeyval, nullptr) != MPI_SUCCESS) {
      RINA_WARN(
          "rina-mpi: cannot attach to MPI_COMM_SELF; rina communicators are not "
          "destroyed at MPI_Finalize and RINA_MPI_STATS prints nothing");
    }
  });
}

CommState* commState(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL) return nullptr;
  const int kv = keyval();
  if (kv == MPI_KEYVAL_INVALID) return nullptr;
  void* value = nullptr;
  int found = 0;
  if (PMPI_Comm_get_attr(comm, kv, &value, &found) != MPI_SUCCESS) return nullptr;
  if (found) return static_cast<CommState*>(value);

  installFinalizeHook();
  auto state = std::make_unique<CommState>();
  int inter = 0;
  if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS ||
      PMPI_Comm_rank(comm, &state->rank) != MPI_SUCCESS ||
      PMPI_Comm_size(comm, &state->size) != MPI_SUCCESS) {
    return nullptr;
  }
  state->intercomm = inter != 0;
  CommState* raw = registry().add(std::move(state));
  raw->name = commName(comm, raw->serial);
  if (PMPI_Comm_set_attr(comm, kv, raw) != MPI_SUCCESS) {
    registry().retire(raw);
    return nullptr;
  }
  return raw;
}

bool ensureRina(CommState& state, MPI_Comm comm) {
  if (state.rinaState == CommState::Rina::kReady) return true;
  if (state.rinaState != CommState::Rina::kNotCreated) return false;
  // Every rank is here, in the same call (the decision to take it depends
  // only on what MPI requires every rank to agree on), so the two
  // collectives below always meet each other. The first hands out rank 0's
  // unique id and waits for every rank, so that rina's own waits
  // (RINA_TIMEOUT_MS) begin together and measure rina alone; the second is
  // the agreement: rina on every rank, or on none.
  struct Offer {
    int32_t idResult;  // rank 0's rinaGetUniqueId result
    int32_t pad;
    rinaUniqueId id;
  };
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  Offer mine{};
  mine.idResult = rinaSuccess;
  if (state.rank == 0) mine.idResult = rinaGetUniqueId(&mine.id);
  std::vector<Offer> offers(static_cast<size_t>(state.size));
  const bool gathered = PMPI_Allgather(&mine, sizeof mine, MPI_BYTE, offers.data(), sizeof mine,
                                       MPI_BYTE, comm) == MPI_SUCCESS;
  const Clock::time_point offered = Clock::now();
  rinaComm_t created = nullptr;
  rinaResult_t result = rinaSystemError;
  std::string why = "the MPI library's allgather of the unique id failed";
  if (gathered && offers[0].idResult != rinaSuccess) {
    result = static_cast<rinaResult_t>(offers[0].idResult);
    why = state.rank == 0 ? rinaCommGetLastError(nullptr) : "rank 0 could not make a unique id";
  } else if (gathered) {
    result = rinaCommInitRank(&created, state.size, offers[0].id, state.rank);
    why = rinaCommGetLastError(nullptr);
  }
  const Clock::time_point initialized = Clock::now();
  int ok = result == rinaSuccess ? 1 : 0;
  int allOk = 0;
  if (PMPI_Allreduce(&ok, &allOk, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS) allOk = 0;
  if (allOk) {
    state.rina = created;
    state.rinaState = CommState::Rina::kReady;
    auto ms = [](Clock::time_point a, Clock::time_point b) {
      return std::chrono::duration<double, std::milli>(b - a).count();
    };
    RINA_INFO(
        "rina-mpi: %s (rank %d of %d): rina communicator ready in %.1f ms (unique id "
        "allgather %.1f, rina set-up %.1f, agreement %.1f)",
        state.name.c_str(), state.rank, state.size, ms(start, Clock::now()), ms(start, offered),
        ms(offered, initialized), ms(initialized, Clock::now()));
    return true;
  }
  if (result != rinaSuccess) {
    RINA_WARN(
        "rina-mpi: %s (rank %d of %d): rina setup failed (%s: %s); this communicator's "
        "calls go to the MPI library",
        state.name.c_str(), state.rank, state.size, rinaGetErrorString(result), why.c_str());
  } else {
    RINA_WARN(
        "rina-mpi: %s (rank %d of %d): rina setup failed on another rank; this "
        "communicator's calls go to the MPI library",
        state.name.c_str(), state.rank, state.size);
  }
  if (created != nullptr) rinaCommDestroy(created);
  state.rinaState = CommState::Rina::kUnavailable;
  return false;
}

}  // namespace rina::mpi
