"""rina as a torch.distributed backend.

    import rina_torch                      # registers the backend "rina"
    torch.distributed.init_process_group("rina")

Every torch.distributed call and DistributedDataParallel then run on rina:
one rina communicator per process group, set up through the group's store,
its collectives run in order on the group's own thread. The group's timeout
is its communicator's timeout (in place of RINA_TIMEOUT_MS); every other
RINA_* variable applies as to any rina communicator (RINA_DEBUG=INFO says
what was chosen). docs/pytorch.md has the details.
"""

import torch.distributed as _dist

from . import _C
from ._C import ProcessGroupRina

__all__ = ["ProcessGroupRina", "BACKEND"]

BACKEND = "rina"


def _create_process_group(store, rank, world_size, timeout):
    return _C.create_process_group(store, rank, world_size, timeout)


if BACKEND.upper() not in _dist.Backend._plugins:
    _dist.Backend.register_backend(BACKEND, _create_process_group)
