"""The name gpu_migration had in older torch_mlu releases: importing it applies the same migration."""
from torch_mlu.utils.gpu_migration import apply, is_applied, restore  # noqa: F401

__all__ = ["apply", "is_applied", "restore"]
