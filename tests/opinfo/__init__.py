"""Helpers of the OpInfo harness (tests/test_opinfo.py): configuration, known failures, result collection."""
