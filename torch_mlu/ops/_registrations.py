"""Autograd, fake-tensor and autocast kernels of torch.ops.torch_mlu's box operators (csrc/aten/ops/BoxOps.cpp).

As torchvision registers them for its own operators: roi_align and roi_pool differentiate with respect to the
image (not the boxes) through their backward operators, which themselves refuse a second derivative; under
autocast (mlu and cpu) the operators run in float32 and roi_align / roi_pool return the input's dtype.
"""
import torch

_OPS = torch.ops.torch_mlu


# ---- autograd ----

def _roi_align_setup(ctx, inputs, output):
    input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned = inputs
    ctx.save_for_backward(rois)
    ctx.attrs = (spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned)
    ctx.input_shape = input.shape


def _roi_align_grad(ctx, grad):
    (rois,) = ctx.saved_tensors
    spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned = ctx.attrs
    batch, channels, height, width = ctx.input_shape
    grad_input = _OPS._roi_align_backward(grad, rois, spatial_scale, pooled_height, pooled_width, batch, channels,
                                          height, width, sampling_ratio, aligned)
    return grad_input, None, None, None, None, None, None


def _roi_pool_setup(ctx, inputs, output):
    input, rois, spatial_scale, pooled_height, pooled_width = inputs
    _, argmax = output
    ctx.mark_non_differentiable(argmax)
    ctx.save_for_backward(rois, argmax)
    ctx.attrs = (spatial_scale, pooled_height, pooled_width)
    ctx.input_shape = input.shape


def _roi_pool_grad(ctx, grad, _grad_argmax):
    rois, argmax = ctx.saved_tensors
    spatial_scale, pooled_height, pooled_width = ctx.attrs
    batch, channels, height, width = ctx.input_shape
    grad_input = _OPS._roi_pool_backward(grad, rois, argmax, spatial_scale, pooled_height, pooled_width, batch,
                                         channels, height, width)
    return grad_input, None, None, None, None


def _no_double_backward(name):
    def refuse(ctx, *grads):
        raise RuntimeError(f"double backwards on {name} not supported")

    return refuse


torch.library.register_autograd("torch_mlu::roi_align", _roi_align_grad, setup_context=_roi_align_setup)
torch.library.register_autograd("torch_mlu::roi_pool", _roi_pool_grad, setup_context=_roi_pool_setup)
torch.library.register_autograd("torch_mlu::_roi_align_backward", _no_double_backward("roi_align"),
                                setup_context=lambda ctx, inputs, output: None)
torch.library.register_autograd("torch_mlu::_roi_pool_backward", _no_double_backward("roi_pool"),
                                setup_context=lambda ctx, inputs, output: None)


# ---- fake tensors (torch.compile, meta) ----

def _check_rois(input, rois):
    torch._check(rois.dim() == 2 and rois.size(1) == 5, lambda: f"rois must have shape as Tensor[K, 5], got "
                 f"{tuple(rois.shape)}")
    torch._check(input.dtype == rois.dtype, lambda: "Expected tensor for input to have the same type as tensor for "
                 f"rois; but type {input.dtype} does not equal {rois.dtype}")


@torch.library.register_fake("torch_mlu::nms")
def _nms_fake(dets, scores, iou_threshold):
    torch._check(dets.dim() == 2, lambda: f"boxes should be a 2d tensor, got {dets.dim()}D")
    torch._check(dets.size(1) == 4, lambda: f"boxes should have 4 elements in dimension 1, got {dets.size(1)}")
    torch._check(scores.dim() == 1, lambda: f"scores should be a 1d tensor, got {scores.dim()}D")
    torch._check(dets.size(0) == scores.size(0), lambda: "boxes and scores should have same number of elements in "
                 f"dimension 0, got {dets.size(0)} and {scores.size(0)}")
    kept = torch.library.get_ctx().new_dynamic_size()
    return dets.new_empty(kept, dtype=torch.long)


@torch.library.register_fake("torch_mlu::roi_align")
def _roi_align_fake(input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned):
    _check_rois(input, rois)
    return input.new_empty((rois.size(0), input.size(1), pooled_height, pooled_width))


@torch.library.register_fake("torch_mlu::_roi_align_backward")
def _roi_align_backward_fake(grad, rois, spatial_scale, pooled_height, pooled_width, batch_size, channels, height,
                             width, sampling_ratio, aligned):
    _check_rois(grad, rois)
    return grad.new_empty((batch_size, channels, height, width))


@torch.library.register_fake("torch_mlu::roi_pool")
def _roi_pool_fake(input, rois, spatial_scale, pooled_height, pooled_width):
    _check_rois(input, rois)
    size = (rois.size(0), input.size(1), pooled_height, pooled_width)
    return input.new_empty(size), input.new_empty(size, dtype=torch.int32)


@torch.library.register_fake("torch_mlu::_roi_pool_backward")
def _roi_pool_backward_fake(grad, rois, argmax, spatial_scale, pooled_height, pooled_width, batch_size, channels,
                            height, width):
    _check_rois(grad, rois)
    return grad.new_empty((batch_size, channels, height, width))


# ---- autocast ----

_AUTOCAST = torch.library.Library("torch_mlu", "IMPL")


def _register_autocast(key):
    excluded = torch._C.DispatchKeySet(getattr(torch._C.DispatchKey, key))

    def nms(dets, scores, iou_threshold):
        with torch._C._ExcludeDispatchKeyGuard(excluded):
            return _OPS.nms(dets.float(), scores.float(), iou_threshold)

    def roi_align(input, rois, *args):
        with torch._C._ExcludeDispatchKeyGuard(excluded):
            return _OPS.roi_align(input.float(), rois.float(), *args).to(input.dtype)

    def roi_pool(input, rois, *args):
        with torch._C._ExcludeDispatchKeyGuard(excluded):
            output, argmax = _OPS.roi_pool(input.float(), rois.float(), *args)
        return output.to(input.dtype), argmax

    for name, fn in (("nms", nms), ("roi_align", roi_align), ("roi_pool", roi_pool)):
        _AUTOCAST.impl(name, fn, key)


_register_autocast("AutocastPrivateUse1")
_register_autocast("AutocastCPU")
