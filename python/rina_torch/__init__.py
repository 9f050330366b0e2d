"""rina as a torch.distributed backend.

    import rina_torch                      # registers the backend "rina"
    torch.distributed.init_process_group("rina")
    torch.distributed.init_process_group("cpu:rina,cuda:gloo")    # torch 2.x device maps

Every torch.distributed call, DistributedDataParallel and FSDP then run on
rina: one rina communicator per process group (and device type), set up
through the group's store, its calls run in order on the group's own
thread. On torch 2.x the backend is a c10d Backend for "cpu" and "cuda"
tensors (CUDA tensors are staged through host memory by librina); on torch
1.13 a c10d ProcessGroup. The group's timeout is its communicator's timeout
(in place of RINA_TIMEOUT_MS); every other RINA_* variable applies as to
any rina communicator (RINA_DEBUG=INFO says what was chosen).
docs/pytorch.md has the details.
"""

import inspect as _inspect

import torch.distributed as _dist

from . import _C
from ._C import RinaBackend

__all__ = ["RinaBackend", "ProcessGroupRina", "BACKEND", "DEVICES"]

BACKEND = "rina"
# The device types whose tensors the backend takes (torch 2.x).
DEVICES = ["cpu", "cuda"]
# The name rina_torch's type had when it was a torch 1.13 ProcessGroup only.
ProcessGroupRina = RinaBackend


def _create_backend(store, rank, world_size, timeout):
    return _C.create_backend(store, rank, world_size, timeout)


def _register():
    if BACKEND.upper() in _dist.Backend._plugins:
        return
    params = _inspect.signature(_dist.Backend.register_backend).parameters
    if "devices" in params:
        _dist.Backend.register_backend(BACKEND, _create_backend, devices=DEVICES)
    else:
        _dist.Backend.register_backend(BACKEND, _create_backend)


_register()
