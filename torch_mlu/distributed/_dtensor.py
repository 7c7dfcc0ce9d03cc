"""torch_mlu's additions to DTensor, made once ``torch.distributed.tensor`` is imported.

Strategies for mlu's attention op (Note [Sharding mlu's attention], _sdpa_sharding.py) and for the optimizers'
list ops DTensor leaves out (Note [Sharding the optimizers' list ops], _optimizer_sharding.py), and a rank's
device in DTensor's compile cache key (Note [DTensor's compile cache key]). Every change is recorded in
:mod:`torch_mlu.patches`, so ``patches.undo_all()`` takes it back out.

Note [DTensor's compile cache key]
AOTAutograd's on-disk cache keys a DTensor input by ``DTensor._stable_hash_for_caching``, which in torch 2.13
hashes the spec (mesh, placements, global shape) and not the local tensor's device. The spec is the same on every
rank, so every rank of a compiled DTensor model (tensor parallelism, FSDP2) gets the same key, and a rank that
compiles after another loads that rank's compiled code, whose device guard and allocations name the other rank's
device ("expected all tensors on mlu:0, got one on mlu:1"; on CUDA, driver errors: pytorch/pytorch#188390, fixed
upstream after 2.13 by adding the local device to the hash). The same fix here: the hash also covers
``str(self._local_tensor.device)``, so each rank's artifacts are its own and a rank's later runs still hit them.
"""

import contextlib
import hashlib

from .. import patches
from .._after_import import after_import
from . import _optimizer_sharding, _sdpa_sharding

_DTENSOR = "torch.distributed.tensor"


def _register():
    from torch.distributed.tensor import DTensor

    propagator = DTensor._op_dispatcher.sharding_propagator
    reason = "sharding strategies for ops DTensor lacks on mlu (torch_mlu/distributed/_dtensor.py)"
    tables = ("op_strategy_funcs", "op_to_schema_info", "op_single_dim_strategy_funcs",
              "op_to_schema_info_for_single_dim_strategy")
    with contextlib.ExitStack() as stack:
        for table in tables:
            stack.enter_context(patches.recording_items(getattr(propagator, table), reason,
                                                        label=f"DTensor {table}"))
        _sdpa_sharding.register(propagator)
        _optimizer_sharding.register()
    _key_compiled_code_by_device()


def _key_compiled_code_by_device():
    from torch.distributed.tensor import DTensor

    spec_hash = DTensor._stable_hash_for_caching

    def _stable_hash_for_caching(self) -> str:
        data = spec_hash(self) + str(self._local_tensor.device)
        return hashlib.blake2b(data.encode(), digest_size=16).hexdigest()

    patches.set_attr(DTensor, "_stable_hash_for_caching", _stable_hash_for_caching,
                     "each rank's device in the compile cache key (Note [DTensor's compile cache key])")


def register_when_dtensor_loads() -> None:
    after_import(_DTENSOR, _register, "extends DTensor once it is imported (torch_mlu/distributed/_dtensor.py)")
