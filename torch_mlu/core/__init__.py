"""torch_mlu 1.x's ``torch_mlu.core`` package, kept so that old scripts run (see mlu_model)."""
