"""``torch.backends.mlu``: the switches of the mlu backend (see :mod:`torch_mlu.backends.mlu`)."""
