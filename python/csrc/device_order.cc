#include "device_order.h"

#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>

namespace rina::torch_backend {

DeviceOrder::DeviceOrder(const std::vector<at::Tensor>& tensors, const char* call) {
  for (const at::Tensor& t : tensors) {
    if (t.defined() && !t.device().is_cpu()) {
      device_ = t.device();
      break;
    }
  }
  if (!device_) return;
  for (const at::Tensor& t : tensors) {
    TORCH_CHECK(!t.defined() || t.device() == *device_, "rina_torch ", call, ": tensors on ",
                *device_, " and ", t.device(), "; one call takes one device");
  }
  if (device_) {
    c10::impl::VirtualGuardImpl impl(device_->type());
    callerStream_ = impl.getStream(*device_);
  }
}

void DeviceOrder::run(const std::function<void()>& fn) const {
  if (!device_) {
    fn();
    return;
  }
  // The thread that runs the call may be a waiting caller's: the guard
  // gives it back its own device after.
  c10::DeviceGuard guard(*device_);
  c10::impl::VirtualGuardImpl impl(device_->type());
  impl.synchronizeStream(*callerStream_);
  fn();
  // The thread's own copies (packing, write-back) ran on its current stream.
  impl.synchronizeStream(impl.getStream(*device_));
}

}  // namespace rina::torch_backend
