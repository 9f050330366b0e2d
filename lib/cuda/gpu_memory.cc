// GPU memory seen from outside CUDA: the device's PCI address (for NIC
// placement) and dmabuf export (for GPUDirect RDMA registration). Driver API
// functions come through cudaGetDriverEntryPointByVersion, not a libcuda link.
#include <cuda.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <cctype>

#include "cuda/cuda_support.h"

namespace rina::cuda {
namespace {

// cuMemGetHandleForAddressRange appeared in CUDA 11.7.
constexpr unsigned kDmabufApiVersion = 11070;

using GetHandleFn = CUresult (*)(void*, CUdeviceptr, size_t, CUmemRangeHandleType,
                                 unsigned long long);
using GetAttributeFn = CUresult (*)(int*, CUdevice_attribute, CUdevice);

template <class Fn>
bool driverEntry(const char* name, unsigned version, Fn* fn, std::string* why) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  cudaError_t e = cudaGetDriverEntryPointByVersion(name, &p, version, cudaEnableDefault, &found);
  if (e != cudaSuccess || found != cudaDriverEntryPointSuccess || !p) {
    (void)cudaGetLastError();
    if (why) *why = std::string("the CUDA driver has no ") + name;
    return false;
  }
  *fn = reinterpret_cast<Fn>(p);
  return true;
}

}  // namespace

bool currentDeviceBusId(std::string* busId, std::string* why) {
  if (!usable(why)) return false;
  int dev = 0;
  char text[32] = {};
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetPCIBusId(text, sizeof text, dev) != cudaSuccess) {
    (void)cudaGetLastError();
    if (why) *why = "cudaDeviceGetPCIBusId failed";
    return false;
  }
  busId->clear();
  for (const char* c = text; *c; ++c) {
    busId->push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(*c))));
  }
  return true;
}

bool dmabufSupported(std::string* why) {
  if (!usable(why)) return false;
  GetHandleFn getHandle = nullptr;
  GetAttributeFn getAttribute = nullptr;
  if (!driverEntry("cuMemGetHandleForAddressRange", kDmabufApiVersion, &getHandle, why) ||
      !driverEntry("cuDeviceGetAttribute", 2000, &getAttribute, why)) {
    return false;
  }
  int dev = 0;
  int supported = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      getAttribute(&supported, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, dev) != CUDA_SUCCESS) {
    (void)cudaGetLastError();
    if (why) *why = "cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED) failed";
    return false;
  }
  if (!supported) {
    if (why) *why = "GPU " + std::to_string(dev) + " does not export memory as dmabuf";
    return false;
  }
  return true;
}

Status dmabufOf(const void* p, size_t bytes, int* fd, uint64_t* offset) {
  GetHandleFn getHandle = nullptr;
  std::string why;
  if (!driverEntry("cuMemGetHandleForAddressRange", kDmabufApiVersion, &getHandle, &why)) {
    return errorf(rinaSystemError, "dmabuf export: %s", why.c_str());
  }
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = reinterpret_cast<uintptr_t>(p) & ~(page - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes + page - 1) & ~(page - 1);
  int handle = -1;
  CUresult r = getHandle(&handle, static_cast<CUdeviceptr>(begin), end - begin,
                         CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
  if (r != CUDA_SUCCESS) {
    return errorf(rinaSystemError, "cuMemGetHandleForAddressRange(%p, %zu bytes): CUresult %d", p,
                  bytes, static_cast<int>(r));
  }
  *fd = handle;
  *offset = reinterpret_cast<uintptr_t>(p) - begin;
  return {};
}

}  // namespace rina::cuda
