"""torchvision.ops' box operators, native on mlu (and on the CPU), without torchvision.

Same names, signatures and semantics as torchvision.ops: ``nms``, ``batched_nms``, ``box_area``, ``box_iou``,
``roi_align``, ``roi_pool`` and the modules ``RoIAlign``, ``RoIPool``. The kernels are torch_mlu's
(torch.ops.torch_mlu.*, csrc/aten/ops/BoxOps.cpp); they also serve torchvision's own operators on mlu when a
torchvision with working operators is imported (Note [torchvision's operators on mlu]).
"""
from . import _registrations  # noqa: F401  (autograd, fake tensors and autocast of the operators)
from .boxes import batched_nms, box_area, box_iou, nms
from .roi import RoIAlign, RoIPool, roi_align, roi_pool

__all__ = ["nms", "batched_nms", "box_area", "box_iou", "roi_align", "roi_pool", "RoIAlign", "RoIPool"]
