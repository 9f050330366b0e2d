// rina_torch._C: the RinaBackend type (a c10d.Backend on torch 2.x, a
// c10d.ProcessGroup on torch 1.13) and its creator, which
// rina_torch/__init__.py registers as torch.distributed backend "rina".
#include <pybind11/chrono.h>
#include <pybind11/pybind11.h>
#include <torch/csrc/utils/pybind.h>

#include "backend.h"

namespace py = pybind11;

namespace rina::torch_backend {

void withoutGil(const std::function<void()>& fn) {
  // The last reference to a backend may go from a thread that holds the
  // GIL (Python's garbage collector) while the backend's thread completes a
  // Future whose Python callbacks need it.
  if (Py_IsInitialized() && PyGILState_Check()) {
    py::gil_scoped_release release;
    fn();
  } else {
    fn();
  }
}

}  // namespace rina::torch_backend

PYBIND11_MODULE(_C, m) {
  using rina::torch_backend::BackendBase;
  using rina::torch_backend::RinaBackend;
  // c10d's Python types, which ours derives from.
  py::module_::import("torch.distributed");
  py::class_<RinaBackend, BackendBase, c10::intrusive_ptr<RinaBackend>>(
      m, "RinaBackend",
      "rina as a torch.distributed backend (made by init_process_group(\"rina\"))")
      .def_property_readonly("timeout", &RinaBackend::timeout,
                             "the group's timeout, every wait's limit in its communicator")
      .def("abort", &RinaBackend::abortNow, py::call_guard<py::gil_scoped_release>(),
           "Never blocks: the call in progress and every later one fail, queued calls fail.")
      .def("shutdown", &RinaBackend::shutdownNow, py::call_guard<py::gil_scoped_release>(),
           "Aborts the call in progress, fails what is queued, waits for the group's thread.")
      .def("errored", &RinaBackend::errored,
           "Whether a call failed or timed out, or the backend was aborted.")
      .def_property_readonly("timed_out", &RinaBackend::timedOut,
                             "Whether a call failed by passing its timeout.");
  m.def("create_backend", &rina::torch_backend::createRinaBackend, py::arg("store"),
        py::arg("rank"), py::arg("size"), py::arg("timeout"),
        py::call_guard<py::gil_scoped_release>(),
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
  m.attr("torch_backend_api") = RINA_TORCH_BACKEND ? "Backend" : "ProcessGroup";
}
