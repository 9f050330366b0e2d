// rina_torch._C: the ProcessGroupRina type and its creator, which
// rina_torch/__init__.py registers as torch.distributed backend "rina".
#include <pybind11/chrono.h>
#include <pybind11/pybind11.h>
#include <torch/csrc/utils/pybind.h>

#include <utility>

#include "process_group.h"

namespace py = pybind11;

namespace rina::torch_backend {
namespace {

// The Python object's reference to a process group. The last reference
// may go from a thread that holds the GIL while the group's thread is
// completing a Future whose Python callbacks need it: the group's
// destructor joins that thread, so it runs with the GIL released.
template <typename T>
class ReleasesGilPtr {
 public:
  ReleasesGilPtr() = default;
  explicit ReleasesGilPtr(T* p) : impl_(c10::intrusive_ptr<T>::unsafe_reclaim_from_nonowning(p)) {}
  explicit ReleasesGilPtr(c10::intrusive_ptr<T> p) : impl_(std::move(p)) {}
  ReleasesGilPtr(const ReleasesGilPtr&) = default;
  ReleasesGilPtr(ReleasesGilPtr&&) noexcept = default;
  ReleasesGilPtr& operator=(const ReleasesGilPtr&) = default;
  ReleasesGilPtr& operator=(ReleasesGilPtr&&) noexcept = default;
  ~ReleasesGilPtr() {
    if (impl_ && impl_.use_count() == 1 && PyGILState_Check()) {
      py::gil_scoped_release release;
      impl_.reset();
    }
  }
  T* get() const { return impl_.get(); }

 private:
  c10::intrusive_ptr<T> impl_;
};

}  // namespace
}  // namespace rina::torch_backend

PYBIND11_DECLARE_HOLDER_TYPE(T, rina::torch_backend::ReleasesGilPtr<T>, true);

namespace rina::torch_backend {
namespace {

ReleasesGilPtr<ProcessGroupRina> create(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                        int size, std::chrono::milliseconds timeout) {
  return ReleasesGilPtr<ProcessGroupRina>(createProcessGroupRina(store, rank, size, timeout));
}

}  // namespace
}  // namespace rina::torch_backend

PYBIND11_MODULE(_C, m) {
  using rina::torch_backend::ProcessGroupRina;
  // c10d.ProcessGroup's Python type, which ours derives from.
  py::module_::import("torch.distributed");
  py::class_<ProcessGroupRina, c10d::ProcessGroup,
             rina::torch_backend::ReleasesGilPtr<ProcessGroupRina>>(
      m, "ProcessGroupRina",
      "rina as a torch.distributed process group (made by init_process_group(\"rina\"))")
      .def_property_readonly("timeout", &ProcessGroupRina::timeout,
                             "the group's timeout, every wait's limit in its communicator");
  m.def("create_process_group", &rina::torch_backend::create, py::arg("store"), py::arg("rank"),
        py::arg("size"), py::arg("timeout"), py::call_guard<py::gil_scoped_release>(),
        "The backend's creator: rendezvous through store, then a rina communicator over the "
        "group's ranks whose waits end after timeout.");
  m.def(
      "rina_version",
      [] {
        int v = 0;
        rinaGetVersion(&v);
        return v;
      },
      "librina's RINA_VERSION_CODE");
}
