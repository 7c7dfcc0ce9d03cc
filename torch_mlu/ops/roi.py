"""roi_align and roi_pool with torchvision.ops' signatures and semantics, and their modules."""
import torch
from torch import Tensor, nn
from torch.nn.modules.utils import _pair


def _check_roi_boxes_shape(boxes) -> None:
    if isinstance(boxes, (list, tuple)):
        for b in boxes:
            torch._assert(b.size(1) == 4,
                          "The shape of the tensor in the boxes list is not correct as List[Tensor[L, 4]]")
    elif isinstance(boxes, torch.Tensor):
        torch._assert(boxes.size(1) == 5, "The boxes tensor shape is not correct as Tensor[K, 5]")
    else:
        torch._assert(False, "boxes is expected to be a Tensor[L, 5] or a List[Tensor[K, 4]]")


def _convert_boxes_to_roi_format(boxes: list[Tensor]) -> Tensor:
    concat = boxes[0] if len(boxes) == 1 else torch.cat(boxes, dim=0)
    ids = [torch.full_like(b[:, :1], i) for i, b in enumerate(boxes)]
    ids = ids[0] if len(ids) == 1 else torch.cat(ids, dim=0)
    return torch.cat([ids, concat], dim=1)


def _rois(boxes) -> Tensor:
    _check_roi_boxes_shape(boxes)
    return boxes if isinstance(boxes, torch.Tensor) else _convert_boxes_to_roi_format(boxes)


def roi_align(input: Tensor, boxes, output_size, spatial_scale: float = 1.0, sampling_ratio: int = -1,
              aligned: bool = False) -> Tensor:
    """RoI Align (Mask R-CNN): each box's region of ``input`` [N, C, H, W] bilinearly sampled into
    ``output_size`` bins, [K, C, out_h, out_w].

    boxes: Tensor[K, 5] of (batch index, x1, y1, x2, y2), or a list of Tensor[L, 4], one per image.
    sampling_ratio: samples per bin side (<= 0: ceil(roi size / output size)). aligned: shift the boxes by
    -0.5 pixel, so that a box's corners fall on pixel centres.
    """
    out_h, out_w = _pair(output_size)
    return torch.ops.torch_mlu.roi_align(input, _rois(boxes), spatial_scale, out_h, out_w, sampling_ratio, aligned)


def roi_pool(input: Tensor, boxes, output_size, spatial_scale: float = 1.0) -> Tensor:
    """RoI max pooling (Fast R-CNN): the maximum of each bin of each box's (rounded) region, [K, C, out_h, out_w]."""
    out_h, out_w = _pair(output_size)
    output, _ = torch.ops.torch_mlu.roi_pool(input, _rois(boxes), spatial_scale, out_h, out_w)
    return output


class RoIAlign(nn.Module):
    """See roi_align."""

    def __init__(self, output_size, spatial_scale: float, sampling_ratio: int, aligned: bool = False):
        super().__init__()
        self.output_size = output_size
        self.spatial_scale = spatial_scale
        self.sampling_ratio = sampling_ratio
        self.aligned = aligned

    def forward(self, input: Tensor, rois) -> Tensor:
        return roi_align(input, rois, self.output_size, self.spatial_scale, self.sampling_ratio, self.aligned)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(output_size={self.output_size}, spatial_scale={self.spatial_scale}, "
                f"sampling_ratio={self.sampling_ratio}, aligned={self.aligned})")


class RoIPool(nn.Module):
    """See roi_pool."""

    def __init__(self, output_size, spatial_scale: float):
        super().__init__()
        self.output_size = output_size
        self.spatial_scale = spatial_scale

    def forward(self, input: Tensor, rois) -> Tensor:
        return roi_pool(input, rois, self.output_size, self.spatial_scale)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(output_size={self.output_size}, spatial_scale={self.spatial_scale})"
