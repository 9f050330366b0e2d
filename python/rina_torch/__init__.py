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

A group that lost a rank is made again, not mended: abort() (never blocks)
or shutdown() the old one, then create_process_group() with the new world
through a fresh store prefix. torchft_process_group() is that cycle as
torchft's reconfigurable process group (torchft's configure()).
"""

import inspect as _inspect

import torch.distributed as _dist

from . import _C
from ._C import RinaBackend

__all__ = ["RinaBackend", "ProcessGroupRina", "BACKEND", "DEVICES", "create_process_group",
           "torchft_process_group"]

BACKEND = "rina"
# The device types whose tensors the backend takes (torch 2.x).
DEVICES = ["cpu", "cuda"]
# The name rina_torch's type had when it was a torch 1.13 ProcessGroup only.
ProcessGroupRina = RinaBackend


def _create_backend(store, rank, world_size, timeout):
    return _C.create_backend(store, rank, world_size, timeout)


def create_process_group(store, rank, world_size, timeout):
    """A process group of world_size ranks on rina, outside the default
    group: its ranks meet through store (give each new world a store prefix
    of its own) and every wait ends after timeout (a datetime.timedelta).
    abort() never blocks; errored() and getError() of its backend say
    whether a call failed."""
    backend = _create_backend(store, rank, world_size, timeout)
    if not hasattr(_dist.ProcessGroup, "_register_backend"):
        return backend  # torch 1.13: the backend is the process group
    import torch
    pg = _dist.ProcessGroup(store, rank, world_size)
    kind = _dist.ProcessGroup.BackendType.CUSTOM
    pg._set_default_backend(kind)
    for device in DEVICES:
        pg._register_backend(torch.device(device), kind, backend)
    return pg


def torchft_process_group(timeout=None):
    """torchft's reconfigurable process group on rina (needs torchft): its
    configure(store_addr, replica_id, rank, world_size, ...) aborts the
    group it had and makes one of the new world (create_process_group)."""
    import datetime
    from torchft import process_group as ft

    class _Rina(ft.ProcessGroupWrapper):
        def _create_pg(self, store, rank, world_size):
            return create_process_group(store, rank, world_size, self._timeout)

        def getBackendName(self):
            return "torchft-rina"

    return _Rina(timeout=timeout or datetime.timedelta(seconds=60))


def _register():
    if BACKEND.upper() in _dist.Backend._plugins:
        return
    params = _inspect.signature(_dist.Backend.register_backend).parameters
    if "devices" in params:
        _dist.Backend.register_backend(BACKEND, _create_backend, devices=DEVICES)
    else:
        _dist.Backend.register_backend(BACKEND, _create_backend)


_register()
