"""Run CUDA code on mlu unmodified: ``import torch_mlu.utils.gpu_migration`` (once, before other work).

After the import, CUDA device references mean mlu: ``"cuda"`` / ``"cuda:N"`` / ``torch.device("cuda", N)``
in factories, ``.to()``, ``.cuda()``, ``torch.load`` and the classes that take a device; ``torch.cuda`` is
torch.mlu under CUDA's names; ``tensor.is_cuda`` is true for mlu tensors; ``nccl`` means ``cncl``; CUDA
environment variables are carried over to their mlu names. What and why: Note [What migration patches]
in migration.py. ``restore()`` undoes it all; ``TORCH_MLU_MIGRATION_WITH_WARNING=0`` silences the
warnings about what could not be migrated.
"""

import torch_mlu  # noqa: F401  (torch.mlu must exist)

from .migration import apply, is_applied, restore

__all__ = ["apply", "is_applied", "restore"]

apply()
