"""Utilities around torch_mlu: ``python -m torch_mlu.utils.collect_env`` for bug reports."""
