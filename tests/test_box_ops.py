"""torch_mlu.ops' box operators against torchvision-free references written from torchvision's CPU kernels.

The references below follow csrc/ops/cpu/{nms,roi_align,roi_pool}_kernel.cpp step by step: the geometry in
the compute type (float32 arithmetic emulated by rounding each result, float64 as is), the sums in float64.
NMS must keep exactly the reference's boxes in its order; the poolings match within the dtype's tolerance,
argmax exactly. Every case runs on the current device, on a non-current one, and on the CPU (the same kernels,
run at the call), and the gradients are checked against autograd through the reference.
"""
import math
import struct

import pytest
import torch

import torch_mlu
import torch_mlu.ops as ops

DEVICES = ["mlu:0", "mlu:1", "cpu"]
FLT_MAX = 3.4028234663852886e38
TOLERANCE = {torch.float64: 1e-10, torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}


def rounding(dtype):
    """Rounds a Python float to the compute type of dtype (float32 for the 16-bit types)."""
    if dtype == torch.float64:
        return lambda x: x
    return lambda x: struct.unpack("f", struct.pack("f", x))[0]


def c_round(v):
    return math.copysign(math.floor(abs(v) + 0.5), v)


# ---- references ----

def iou_matrix(boxes):
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    lt = torch.max(boxes[:, None, :2], boxes[:, :2])
    rb = torch.min(boxes[:, None, 2:], boxes[:, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[:, :, 0] * wh[:, :, 1]
    return inter / (area[:, None] + area - inter)


def reference_nms(boxes, scores, threshold):
    order = scores.sort(stable=True, descending=True).indices.tolist()
    iou = iou_matrix(boxes).double()
    keep = []
    while order:
        current = order.pop(0)
        keep.append(current)
        order = [j for j in order if not iou[current, j] > threshold]
    return torch.tensor(keep, dtype=torch.long)


def reference_roi_align(input, rois, scale, pooled, sampling_ratio, aligned):
    """Differentiable in input (float64 sums of the bilinear samples)."""
    r = rounding(input.dtype)
    K, (_, C, H, W) = rois.size(0), input.shape
    x = input.double()
    out = torch.zeros(K, C, pooled[0], pooled[1], dtype=torch.float64)
    s = r(scale)
    offset = 0.5 if aligned else 0.0
    rows = []
    for n in range(K):
        b, x1, y1, x2, y2 = (float(v) for v in rois[n].float().tolist()) if input.dtype != torch.float64 \
            else (float(v) for v in rois[n].tolist())
        b = int(b)
        start_w, start_h = r(r(x1 * s) - offset), r(r(y1 * s) - offset)
        roi_w, roi_h = r(r(r(x2 * s) - offset) - start_w), r(r(r(y2 * s) - offset) - start_h)
        if not aligned:
            roi_w, roi_h = max(roi_w, 1.0), max(roi_h, 1.0)
        bin_h, bin_w = r(roi_h / pooled[0]), r(roi_w / pooled[1])
        grid_h = sampling_ratio if sampling_ratio > 0 else math.ceil(r(roi_h / pooled[0]))
        grid_w = sampling_ratio if sampling_ratio > 0 else math.ceil(r(roi_w / pooled[1]))
        count = max(grid_h * grid_w, 1)
        bins = []
        for ph in range(pooled[0]):
            for pw in range(pooled[1]):
                total = torch.zeros(C, dtype=torch.float64)
                for iy in range(grid_h):
                    yy = r(r(start_h + r(ph * bin_h)) + r(r((iy + 0.5) * bin_h) / grid_h))
                    for ix in range(grid_w):
                        xx = r(r(start_w + r(pw * bin_w)) + r(r((ix + 0.5) * bin_w) / grid_w))
                        if not (-1.0 <= yy <= H and -1.0 <= xx <= W):
                            continue
                        y, xq = max(yy, 0.0), max(xx, 0.0)
                        y_low, x_low = int(y), int(xq)
                        if y_low >= H - 1:
                            y_high = y_low = H - 1
                            y = float(y_low)
                        else:
                            y_high = y_low + 1
                        if x_low >= W - 1:
                            x_high = x_low = W - 1
                            xq = float(x_low)
                        else:
                            x_high = x_low + 1
                        ly, lx = r(y - y_low), r(xq - x_low)
                        hy, hx = r(1 - ly), r(1 - lx)
                        total = total + (r(hy * hx) * x[b, :, y_low, x_low] + r(hy * lx) * x[b, :, y_low, x_high] +
                                         r(ly * hx) * x[b, :, y_high, x_low] + r(ly * lx) * x[b, :, y_high, x_high])
                bins.append(total / count)
        rows.append(torch.stack(bins, 1).reshape(C, pooled[0], pooled[1]))
    return torch.stack(rows) if rows else out


def reference_roi_pool(input, rois, scale, pooled):
    r = rounding(input.dtype)
    K, (_, C, H, W) = rois.size(0), input.shape
    x = input.double()
    out = torch.zeros(K, C, pooled[0], pooled[1], dtype=torch.float64)
    argmax = torch.full((K, C, pooled[0], pooled[1]), -1, dtype=torch.int32)
    s = r(scale)
    for n in range(K):
        b, x1, y1, x2, y2 = (float(v) for v in (rois[n].double() if input.dtype == torch.float64
                                                 else rois[n].float()).tolist())
        b = int(b)
        start_w, start_h, end_w, end_h = (int(c_round(r(v * s))) for v in (x1, y1, x2, y2))
        roi_w, roi_h = max(end_w - start_w + 1, 1), max(end_h - start_h + 1, 1)
        bin_h, bin_w = r(roi_h / pooled[0]), r(roi_w / pooled[1])
        for ph in range(pooled[0]):
            for pw in range(pooled[1]):
                h0 = min(max(math.floor(r(ph * bin_h)) + start_h, 0), H)
                h1 = min(max(math.ceil(r((ph + 1) * bin_h)) + start_h, 0), H)
                w0 = min(max(math.floor(r(pw * bin_w)) + start_w, 0), W)
                w1 = min(max(math.ceil(r((pw + 1) * bin_w)) + start_w, 0), W)
                empty = h1 <= h0 or w1 <= w0
                for c in range(C):
                    best, best_at = (0.0 if empty else -FLT_MAX), -1
                    for h in range(h0, h1):
                        for w in range(w0, w1):
                            v = float(x[b, c, h, w])
                            if v > best:
                                best, best_at = v, h * W + w
                    out[n, c, ph, pw], argmax[n, c, ph, pw] = best, best_at
    return out, argmax


# ---- inputs ----

def random_boxes(n, generator, size=64.0, dtype=torch.float32):
    xy = torch.rand(n, 2, generator=generator, dtype=torch.float64) * size
    wh = torch.rand(n, 2, generator=generator, dtype=torch.float64) * size / 3
    return torch.cat([xy, xy + wh], 1).to(dtype)


def random_rois(k, batch, height, width, generator, dtype):
    """Boxes inside, across and outside the image, malformed (x2 < x1) and degenerate (a point)."""
    x = torch.empty(k, 2, dtype=torch.float64).uniform_(-0.3 * width, 1.2 * width, generator=generator)
    y = torch.empty(k, 2, dtype=torch.float64).uniform_(-0.3 * height, 1.2 * height, generator=generator)
    rois = torch.stack([torch.randint(0, batch, (k,), generator=generator).double(), x[:, 0], y[:, 0], x[:, 1],
                        y[:, 1]], 1)
    rois[0, 1:] = torch.tensor([1.0, 1.0, 1.0, 1.0])  # a point
    rois[1, 1:] = torch.tensor([0.0, 0.0, width - 1.0, height - 1.0])  # the whole image
    return rois.to(dtype)


# ---- nms ----

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("n", [0, 1, 7, 300])
@pytest.mark.parametrize("threshold", [0.0, 0.3, 0.7, 1.0])
def test_nms_keeps_the_references_boxes_in_its_order(device, dtype, n, threshold):
    g = torch.Generator().manual_seed(n)
    boxes = random_boxes(n, g, dtype=dtype)
    scores = torch.rand(n, generator=g, dtype=torch.float64).to(dtype)
    if n >= 7:
        scores[3] = scores[5]  # a tie: the lower index first
        boxes[6] = boxes[2]  # a duplicate box
        boxes[4, 2:] = boxes[4, :2]  # zero area: its IoU with itself is NaN, which suppresses nothing
    expected = reference_nms(boxes, scores, threshold)
    got = ops.nms(boxes.to(device), scores.to(device), threshold)
    assert got.device == torch.device(device) and got.dtype == torch.long
    assert torch.equal(got.cpu(), expected), (got.cpu().tolist(), expected.tolist())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_nms_threshold_is_strict_and_compared_as_torchvision_compares_it(dtype):
    """IoU x / 10 against thresholds equal to it, just below and just above, and one a float32 cannot hold
    (0.3: float32's 0.3 is above it, so an IoU of float32 0.3 is suppressed, as torchvision's double compare does)."""
    widths = torch.arange(1, 10, dtype=dtype)
    boxes = torch.cat([torch.tensor([[0.0, 0.0, 10.0, 1.0]], dtype=dtype),
                       torch.stack([torch.zeros(9, dtype=dtype), torch.zeros(9, dtype=dtype), widths,
                                    torch.ones(9, dtype=dtype)], 1)])
    for threshold in (0.5, 0.3, 0.7, 0.5 - 1e-9, 0.5 + 1e-9, 0.30000001192092896):
        for k in range(1, 10):  # the wide box first, then the box of IoU k / 10
            pair, scores = boxes[[0, k]], torch.tensor([1.0, 0.5], dtype=dtype)
            expected = reference_nms(pair, scores, threshold)
            for device in ("mlu", "cpu"):
                got = ops.nms(pair.to(device), scores.to(device), threshold).cpu()
                assert torch.equal(got, expected), (dtype, threshold, k, got.tolist(), expected.tolist())


@pytest.mark.parametrize("device", ["mlu:0", "cpu"])
def test_batched_nms_never_suppresses_across_categories(device):
    g = torch.Generator().manual_seed(0)
    boxes = random_boxes(200, g)
    scores = torch.rand(200, generator=g)
    idxs = torch.randint(0, 4, (200,), generator=g)
    expected = set()
    for c in range(4):
        members = torch.where(idxs == c)[0]
        expected |= set(members[reference_nms(boxes[members], scores[members], 0.5)].tolist())
    from torch_mlu.ops.boxes import _batched_nms_vanilla

    for path in (ops.batched_nms, _batched_nms_vanilla):
        got = path(boxes.to(device), scores.to(device), idxs.to(device), 0.5).cpu()
        assert set(got.tolist()) == expected, path
        assert torch.all(scores[got][:-1] >= scores[got][1:]), "not in decreasing score order"


def test_nms_refuses_bad_input_clearly():
    boxes, scores = torch.rand(4, 4, device="mlu"), torch.rand(4, device="mlu")
    with pytest.raises(RuntimeError, match="boxes should have 4 elements in dimension 1, got 3"):
        ops.nms(boxes[:, :3], scores, 0.5)
    with pytest.raises(RuntimeError, match="boxes and scores should have same number of elements"):
        ops.nms(boxes, scores[:3], 0.5)
    with pytest.raises(NotImplementedError, match="nms takes float32 or float64"):
        ops.nms(boxes.half(), scores.half(), 0.5)
    with pytest.raises(RuntimeError, match="expected scores on mlu:0 like boxes, but got it on cpu"):
        ops.nms(boxes, scores.cpu(), 0.5)
    assert torch.equal(ops.nms(boxes, scores, 0.5).cpu(), reference_nms(boxes.cpu(), scores.cpu(), 0.5))


def test_box_iou_and_area_match_the_formula():
    g = torch.Generator().manual_seed(1)
    a, b = random_boxes(9, g), random_boxes(5, g)
    for device in DEVICES:
        torch.testing.assert_close(ops.box_iou(a.to(device), b.to(device)).cpu(), iou_matrix(torch.cat([a, b]))[:9, 9:])
        torch.testing.assert_close(ops.box_area(a.half().to(device)).cpu(), ops.box_area(a.half().float()))
    assert ops.box_iou(a.half().mlu(), b.half().mlu()).dtype == torch.float32


# ---- roi_align / roi_pool ----

ROI_CASES = [  # (spatial_scale, output size, sampling_ratio, aligned)
    (1.0, (3, 3), -1, False),
    (0.5, (2, 3), 2, True),
    (1 / 7, (3, 2), -1, True),
    (0.25, (1, 1), 3, False),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("case", range(len(ROI_CASES)))
def test_roi_align_and_its_gradient_match_the_reference(device, dtype, case):
    scale, pooled, sampling_ratio, aligned = ROI_CASES[case]
    g = torch.Generator().manual_seed(case)
    size = (2, 3, round(9 / scale ** 0.5), round(11 / scale ** 0.5))
    image = torch.randn(size, generator=g, dtype=torch.float64).to(dtype)
    rois = random_rois(6, 2, size[2] / scale, size[3] / scale, g, dtype)
    x = image.double().requires_grad_()
    expected = reference_roi_align(x, rois, scale, pooled, sampling_ratio, aligned)
    grad_out = torch.randn(expected.shape, generator=g, dtype=torch.float64).to(dtype)
    (expected_grad,) = torch.autograd.grad(expected, x, grad_out.double())

    on_device = image.to(device).requires_grad_()
    got = ops.roi_align(on_device, rois.to(device), pooled, scale, sampling_ratio, aligned)
    assert got.dtype == dtype and got.shape == expected.shape
    tol = TOLERANCE[dtype]
    torch.testing.assert_close(got.detach().cpu().double(), expected.detach(), rtol=tol, atol=tol)
    (grad,) = torch.autograd.grad(got, on_device, grad_out.to(device))
    torch.testing.assert_close(grad.cpu().double(), expected_grad, rtol=tol, atol=4 * tol)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("scale", [1.0, 0.5, 1 / 3])
def test_roi_pool_and_its_gradient_match_the_reference(device, dtype, scale):
    g = torch.Generator().manual_seed(int(scale * 100))
    size = (2, 3, 10, 12)
    image = torch.randn(size, generator=g, dtype=torch.float64).to(dtype)
    image[0, 0, 2, 3:5] = 5.0  # a tie inside one bin: the first maximum wins
    rois = random_rois(6, 2, size[2] / scale, size[3] / scale, g, dtype)
    expected, expected_argmax = reference_roi_pool(image, rois, scale, (3, 2))
    got, argmax = torch.ops.torch_mlu.roi_pool(image.to(device), rois.to(device), scale, 3, 2)
    assert torch.equal(argmax.cpu(), expected_argmax)
    torch.testing.assert_close(got.cpu().double(), expected, rtol=0, atol=0)
    grad_out = torch.randn(expected.shape, generator=g, dtype=torch.float64).to(dtype)
    on_device = image.to(device).requires_grad_()
    (grad,) = torch.autograd.grad(ops.roi_pool(on_device, rois.to(device), (3, 2), scale), on_device,
                                  grad_out.to(device))
    expected_grad = torch.zeros(size, dtype=torch.float64)
    for n, c, ph, pw in torch.nonzero(expected_argmax >= 0).tolist():
        b, at = int(rois[n, 0]), int(expected_argmax[n, c, ph, pw])
        expected_grad[b, c].view(-1)[at] += float(grad_out[n, c, ph, pw])
    torch.testing.assert_close(grad.cpu().double(), expected_grad, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])


def test_roi_align_takes_a_list_of_boxes_per_image_and_modules():
    g = torch.Generator().manual_seed(3)
    image = torch.randn(2, 4, 16, 16, generator=g)
    boxes = [random_boxes(3, g, size=16.0), random_boxes(2, g, size=16.0)]
    rois = torch.cat([torch.cat([torch.full((len(b), 1), float(i)), b], 1) for i, b in enumerate(boxes)])
    expected = ops.roi_align(image, rois, 4, 0.5, 2, True)
    got = ops.roi_align(image.mlu(), [b.mlu() for b in boxes], 4, 0.5, 2, True)
    torch.testing.assert_close(got.cpu(), expected, rtol=0, atol=0)
    module = ops.RoIAlign((4, 4), 0.5, 2, aligned=True)
    torch.testing.assert_close(module(image.mlu(), rois.mlu()).cpu(), expected, rtol=0, atol=0)
    torch.testing.assert_close(ops.RoIPool(3, 0.5)(image.mlu(), rois.mlu()).cpu(), ops.roi_pool(image, rois, 3, 0.5),
                               rtol=0, atol=0)
    assert "RoIAlign(output_size=(4, 4), spatial_scale=0.5" in repr(module)


def test_roi_ops_refuse_bad_input_and_keep_working():
    image, rois = torch.randn(2, 3, 8, 8, device="mlu"), torch.tensor([[0.0, 1, 1, 5, 5]], device="mlu")
    with pytest.raises(RuntimeError, match=r"rois must have shape as Tensor\[K, 5\]"):
        torch.ops.torch_mlu.roi_align(image, rois[:, :4], 1.0, 2, 2, -1, False)
    with pytest.raises(RuntimeError, match="Expected tensor for input to have the same type as tensor for rois"):
        torch.ops.torch_mlu.roi_align(image, rois.double(), 1.0, 2, 2, -1, False)
    with pytest.raises(AssertionError, match=r"The boxes tensor shape is not correct as Tensor\[K, 5\]"):
        ops.roi_align(image, rois[:, 1:], 2)
    with pytest.raises(RuntimeError, match="expected rois on mlu:0 like input, but got it on cpu"):
        ops.roi_pool(image, rois.cpu(), 2)
    with pytest.raises(NotImplementedError, match="takes float16, bfloat16, float32 or float64 images"):
        torch.ops.torch_mlu.roi_align(image.int(), rois.int(), 1.0, 2, 2, -1, False)
    # A batch index past the images: an IndexError on the CPU, a device-side error on mlu naming it.
    bad = torch.tensor([[5.0, 1, 1, 5, 5]])
    with pytest.raises(IndexError, match=r"batch index .* is 5, outside \[0, 2\)"):
        ops.roi_align(image.cpu(), bad, 2)
    ops.roi_align(image, bad.mlu(), 2)
    with pytest.raises(torch.AcceleratorError, match=r"roi_align: a roi's batch index .* is 5, outside \[0, 2\)"):
        torch.mlu.synchronize()
    torch.testing.assert_close(ops.roi_align(image, rois, 2).cpu(), ops.roi_align(image.cpu(), rois.cpu(), 2))


def test_second_derivative_is_refused():
    image = torch.randn(1, 2, 6, 6, device="mlu", dtype=torch.float64, requires_grad=True)
    rois = torch.tensor([[0.0, 0.5, 0.5, 4.0, 4.5]], device="mlu", dtype=torch.float64)
    out = ops.roi_align(image, rois, 2, 1.0, 2)
    v = torch.ones_like(out, requires_grad=True)  # the gradient is then a function of v
    (grad,) = torch.autograd.grad(out, image, v, create_graph=True)
    with pytest.raises(RuntimeError, match="double backwards on roi_align not supported"):
        grad.sum().backward()


def test_gradcheck_on_mlu():
    image = torch.randn(1, 2, 5, 6, device="mlu:1", dtype=torch.float64, requires_grad=True)
    rois = torch.tensor([[0.0, 0.3, 0.6, 3.7, 4.2], [0.0, -1.0, 1.0, 7.0, 2.5]], device="mlu:1", dtype=torch.float64)
    assert torch.autograd.gradcheck(lambda x: ops.roi_align(x, rois, (2, 3), 1.0, 2, True), (image,))


def test_autocast_runs_in_float32_and_returns_the_input_dtype():
    g = torch.Generator().manual_seed(4)
    image = torch.randn(2, 3, 12, 12, generator=g)
    rois = random_rois(5, 2, 12, 12, g, torch.float32)
    boxes, scores = random_boxes(20, g), torch.rand(20, generator=g)
    for device in ("mlu", "cpu"):
        with torch.autocast(device, dtype=torch.bfloat16):
            features = image.to(device).bfloat16()
            aligned = ops.roi_align(features, rois.to(device), 3, 1.0, 2)
            pooled = ops.roi_pool(features, rois.to(device), 3)
            kept = ops.nms(boxes.to(device).bfloat16(), scores.to(device).bfloat16(), 0.5)
        assert aligned.dtype == torch.bfloat16 and pooled.dtype == torch.bfloat16
        torch.testing.assert_close(aligned.float().cpu(),
                                   ops.roi_align(image.bfloat16().float(), rois, 3, 1.0, 2).bfloat16().float())
        assert torch.equal(kept.cpu(), ops.nms(boxes.bfloat16().float(), scores.bfloat16().float(), 0.5))


def test_compiled_roi_align_matches_eager():
    g = torch.Generator().manual_seed(5)
    image = torch.randn(2, 3, 12, 12, generator=g).mlu().requires_grad_()
    rois = random_rois(5, 2, 12, 12, g, torch.float32).mlu()

    def head(x):
        return ops.roi_align(x.relu() * 2, rois, 3, 1.0, 2, True).sum(dim=(2, 3))

    compiled = torch.compile(head, fullgraph=True)
    torch.testing.assert_close(compiled(image), head(image))
    (g1,) = torch.autograd.grad(compiled(image).sum(), image)
    (g2,) = torch.autograd.grad(head(image).sum(), image)
    torch.testing.assert_close(g1, g2)


def test_box_ops_run_in_stream_order_behind_another_devices_busy_stream():
    """A gated stream on mlu:1 holds its work; the ops on mlu:0 are not held behind it and read what the queued
    producer on mlu:0 wrote."""
    g = torch.Generator().manual_seed(6)
    image, rois = torch.randn(1, 2, 8, 8, generator=g), random_rois(4, 1, 8, 8, g, torch.float32)
    with torch.mlu.device(1):
        gate = torch_mlu._C._StreamGate(60.0)
    try:
        source = torch.zeros(1, 2, 8, 8, device="mlu:0")
        source.add_(image.mlu())  # queued on mlu:0 before the op reads it
        got = ops.roi_align(source, rois.mlu(), 2)
        torch.testing.assert_close(got.cpu(), ops.roi_align(image, rois, 2))
    finally:
        gate.open()
        torch.mlu.synchronize(1)


def test_torchvisions_operators_run_these_kernels_on_mlu(python):
    """torchvision's schemas defined as its C++ library does (PyPI's torchvision cannot load over the CPU torch):
    torch.ops.torchvision.* on mlu reach torch_mlu's kernels; an operator whose schema differs is refused by
    name rather than misread."""
    r = python(r"""
        import torch
        lib = torch.library.Library("torchvision", "DEF")
        lib.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        lib.define("roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
                   "SymInt pooled_width, int sampling_ratio, bool aligned) -> Tensor")
        lib.define("roi_pool(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
                   "SymInt pooled_width) -> (Tensor, Tensor)")
        lib.define("_roi_pool_backward(Tensor grad, Tensor rois, Tensor argmax, float spatial_scale, "
                   "SymInt pooled_height, SymInt pooled_width, int batch_size) -> Tensor")
        import torch_mlu, torch_mlu.ops as ops
        image, rois = torch.randn(2, 3, 9, 9), torch.tensor([[1.0, 0.5, 1.0, 6.0, 7.5], [0.0, 2, 2, 8, 8]])
        got = torch.ops.torchvision.roi_align(image.mlu(), rois.mlu(), 0.5, 2, 3, 2, True)
        assert torch.equal(got.cpu(), ops.roi_align(image, rois, (2, 3), 0.5, 2, True))
        out, argmax = torch.ops.torchvision.roi_pool(image.mlu(), rois.mlu(), 1.0, 2, 2)
        assert torch.equal(out.cpu(), ops.roi_pool(image, rois, 2))
        boxes, scores = torch.rand(30, 2).repeat(1, 2) * 10 + torch.tensor([0, 0, 3, 3]), torch.rand(30)
        assert torch.equal(torch.ops.torchvision.nms(boxes.mlu(), scores.mlu(), 0.4).cpu(), ops.nms(boxes, scores, 0.4))
        try:
            torch.ops.torchvision._roi_pool_backward(out, rois.mlu(), argmax, 1.0, 2, 2, 2)
        except RuntimeError as e:
            assert "reads the arguments of torchvision 0.28's" in str(e), e
            print("ok")
    """)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr
