"""nms, batched_nms, box_area and box_iou with torchvision.ops.boxes' semantics (torchvision 0.28).

Boxes are (x1, y1, x2, y2) with 0 <= x1 < x2 and 0 <= y1 < y2; widths have no +1.
"""
import torch
from torch import Tensor


def nms(boxes: Tensor, scores: Tensor, iou_threshold: float) -> Tensor:
    """Indices (int64) of the boxes kept by greedy non-maximum suppression, by decreasing score.

    A box is dropped when a kept box of higher score overlaps it with IoU > iou_threshold. Ties in score keep
    the lower index first (a stable sort, as torchvision's CPU kernel). float32 or float64.
    """
    return torch.ops.torch_mlu.nms(boxes, scores, iou_threshold)


def batched_nms(boxes: Tensor, scores: Tensor, idxs: Tensor, iou_threshold: float) -> Tensor:
    """nms within each category of ``idxs`` (boxes of different categories never suppress each other)."""
    # torchvision's switch: a loop over the categories above this many coordinates, else one nms over boxes
    # moved apart by category.
    if boxes.numel() > (4000 if boxes.device.type == "cpu" else 100_000) and not torch.jit.is_tracing():
        return _batched_nms_vanilla(boxes, scores, idxs, iou_threshold)
    return _batched_nms_coordinate_trick(boxes, scores, idxs, iou_threshold)


def _batched_nms_coordinate_trick(boxes: Tensor, scores: Tensor, idxs: Tensor, iou_threshold: float) -> Tensor:
    if boxes.numel() == 0:
        return torch.empty((0,), dtype=torch.int64, device=boxes.device)
    max_coordinate = boxes.max()
    offsets = idxs.to(boxes) * (max_coordinate + torch.tensor(1).to(boxes))
    return nms(boxes + offsets[:, None], scores, iou_threshold)


def _batched_nms_vanilla(boxes: Tensor, scores: Tensor, idxs: Tensor, iou_threshold: float) -> Tensor:
    keep_mask = torch.zeros_like(scores, dtype=torch.bool)
    for class_id in torch.unique(idxs):
        curr_indices = torch.where(idxs == class_id)[0]
        curr_keep_indices = nms(boxes[curr_indices], scores[curr_indices], iou_threshold)
        keep_mask[curr_indices[curr_keep_indices]] = True
    keep_indices = torch.where(keep_mask)[0]
    return keep_indices[scores[keep_indices].sort(descending=True)[1]]


def _upcast(t: Tensor) -> Tensor:
    # Guards against overflow in multiplications of 16-bit types.
    if t.is_floating_point():
        return t if t.dtype in (torch.float32, torch.float64) else t.float()
    return t if t.dtype in (torch.int32, torch.int64) else t.int()


def box_area(boxes: Tensor) -> Tensor:
    """Areas [N] of boxes [N, 4] (16-bit floats and small integers computed in float32 / int32)."""
    boxes = _upcast(boxes)
    return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


def _box_inter_union(boxes1: Tensor, boxes2: Tensor) -> tuple[Tensor, Tensor]:
    area1 = box_area(boxes1)
    area2 = box_area(boxes2)
    lt = torch.max(boxes1[:, None, :2], boxes2[:, :2])  # [N, M, 2]
    rb = torch.min(boxes1[:, None, 2:], boxes2[:, 2:])  # [N, M, 2]
    wh = _upcast(rb - lt).clamp(min=0)  # [N, M, 2]
    inter = wh[:, :, 0] * wh[:, :, 1]  # [N, M]
    union = area1[:, None] + area2 - inter
    return inter, union


def box_iou(boxes1: Tensor, boxes2: Tensor) -> Tensor:
    """Pairwise IoU [N, M] of boxes1 [N, 4] and boxes2 [M, 4]."""
    inter, union = _box_inter_union(boxes1, boxes2)
    return inter / union
