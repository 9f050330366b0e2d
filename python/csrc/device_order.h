// CUDA tensors take librina's device path (staged through pinned host
// buffers). A call on them is ordered as NCCL's are from the caller's view:
// it starts after the work queued on the caller's current stream when the
// call was made, and when it completes nothing it wrote is still queued.
// On CPU tensors all of this does nothing.
#ifndef RINA_PYTHON_CSRC_DEVICE_ORDER_H_
#define RINA_PYTHON_CSRC_DEVICE_ORDER_H_

#include <ATen/ATen.h>
#include <c10/core/Stream.h>

#include <functional>
#include <optional>
#include <vector>

namespace rina::torch_backend {

class DeviceOrder {
 public:
  DeviceOrder() = default;
  // In the caller's thread, when the call is made: notes the caller's
  // stream of the first CUDA tensor among tensors (all must be on one device).
  explicit DeviceOrder(const std::vector<at::Tensor>& tensors, const char* call);

  // Runs fn on the thread that runs the call: on the tensors' device, after
  // the caller's stream reached the call, and with the device's work of fn
  // finished before returning.
  void run(const std::function<void()>& fn) const;
  bool onDevice() const { return device_.has_value(); }

 private:
  std::optional<c10::Device> device_;
  std::optional<c10::Stream> callerStream_;
};

}  // namespace rina::torch_backend

#endif  // RINA_PYTHON_CSRC_DEVICE_ORDER_H_
