"""End-to-end training on mlu against stock PyTorch on the CPU (same process, same seed, same data).

Results and the targets they are measured against: docs/bench_models.md.

Models (training steps per second: forward, loss, backward, optimizer step, gradients reset):
- mlp: 1024 -> 2048 -> 2048 -> 10 with ReLU, batch 128, Adam;
- cnn: a ResNet-18-shaped network (basic blocks 2-2-2-2, widths 64-512, batch norm) on 64x64 RGB images,
  batch 16, 100 classes, SGD with momentum;
- gpt: the GPT-mini of examples/gpt.py (4 layers, width 256, 4 heads, sequence 256, batch 8, 256-symbol
  vocabulary), AdamW;
- video: examples/video_actions.py's (2+1)-D CNN, 32 clips of 8 frames at 32x32, channels-last-3d, AdamW;
- detection: examples/detection.py's detector, 32 scenes of 64x64, both stages (RoI align forward and
  backward), AdamW;
- face: examples/face_recognition.py's residual embedding network and ArcFace head (angular margin), 128
  photos of 40x40 from 32 identities, SGD with Nesterov momentum;
- speech: examples/speech_synthesis.py's vocoder (transposed 1-D convolutions, dilated residual blocks) on 16
  log-mel spectrograms of half a second, its multi-resolution STFT and log-mel loss, AdamW;
each in float32 and with bfloat16 autocast; optimizers with PyTorch's defaults (foreach on both devices).
Plus inference (forward passes per second under torch.inference_mode):
- bert: a BERT-style sentence encoder, the shape of all-MiniLM-L6-v2 (6 post-norm layers, width 384, 12 heads,
  feed-forward 1536, GELU; 30522-symbol vocabulary, learned positions), batch 64 of 32 tokens with padding
  masks of random lengths, mean-pooled over the unmasked tokens.
The steps of a measurement are queued back to back and the device synchronized once at the end, as a training
loop that reads the loss back every few steps would. Plus the eager per-op host cost: `torch.add` of two
16-element tensors in a loop (microseconds per op; on mlu including the final synchronize).

Each pass measures every case on both devices; a training case takes turns between them, a chunk of steps
(about 0.3 s) on one, then on the other, each rate the median of its chunks' (interleaved_rates: on a shared
host both sides see the same swings). --repeat R reports the median of R passes.
ratio = mlu steps/s / cpu steps/s (above 1: mlu faster); for the tiny op, ratio = mlu us / cpu us (below 1:
mlu cheaper).

    python benchmarks/bench_models.py [--cases 'gpt*'] [--repeat 3] [--min-time 2]
        [--out benchmarks/results/bench_models.json]
"""
import argparse
import copy
import fnmatch
import json
import os
import platform
import statistics
import sys
import time

from host_isa import add_isa_argument, force_isa_from_argv, isa_label, isa_report

force_isa_from_argv()  # before torch loads: the caps are read at start-up

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import torch_mlu  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
import detection  # noqa: E402
import face_recognition  # noqa: E402
import speech_synthesis  # noqa: E402
import video_actions  # noqa: E402
from gpt import GPT, GPTConfig  # noqa: E402


class BasicBlock(nn.Module):
    def __init__(self, c_in, c_out, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.down = None
        if stride != 1 or c_in != c_out:
            self.down = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (x if self.down is None else self.down(x)))


def resnet18(classes=100):
    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1)]
    c_in = 64
    for c_out, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [BasicBlock(c_in, c_out, stride), BasicBlock(c_out, c_out, 1)]
        c_in = c_out
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, classes)]
    return nn.Sequential(*layers)


class GPTLoss(nn.Module):
    """The GPT's forward returning only the loss, so every model is called as model(x, y) -> loss."""

    def __init__(self):
        super().__init__()
        self.gpt = GPT(GPTConfig(vocab_size=256, block_size=256, n_layer=4, n_head=4, n_embd=256))

    def forward(self, x, y):
        return self.gpt(x, y)[1]


class Classifier(nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x, y):
        return F.cross_entropy(self.net(x), y)


class BertLayer(nn.Module):
    """One post-norm encoder layer as Hugging Face's BertLayer computes it (SDPA attention)."""

    def __init__(self, width, heads, ffn):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)
        self.norm1 = nn.LayerNorm(width, eps=1e-12)
        self.up = nn.Linear(width, ffn)
        self.down = nn.Linear(ffn, width)
        self.norm2 = nn.LayerNorm(width, eps=1e-12)

    def forward(self, x, mask):
        b, t, w = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, w // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask).transpose(1, 2).reshape(b, t, w)
        x = self.norm1(x + self.out(a))
        return self.norm2(x + self.down(F.gelu(self.up(x))))


class BertEncoder(nn.Module):
    def __init__(self, vocab=30522, width=384, layers=6, heads=12, ffn=1536, max_len=512):
        super().__init__()
        self.tokens = nn.Embedding(vocab, width)
        self.positions = nn.Embedding(max_len, width)
        self.norm = nn.LayerNorm(width, eps=1e-12)
        self.layers = nn.ModuleList(BertLayer(width, heads, ffn) for _ in range(layers))

    def forward(self, ids, lengths):
        t = ids.shape[1]
        keep = torch.arange(t, device=ids.device)[None, :] < lengths[:, None]  # [b, t]
        x = self.norm(self.tokens(ids) + self.positions(torch.arange(t, device=ids.device)))
        mask = keep[:, None, None, :]
        for layer in self.layers:
            x = layer(x, mask)
        keep = keep[..., None].to(x.dtype)
        return (x * keep).sum(1) / keep.sum(1)


def mlp_model():
    net = nn.Sequential(nn.Linear(1024, 2048), nn.ReLU(), nn.Linear(2048, 2048), nn.ReLU(), nn.Linear(2048, 10))
    return (Classifier(net), lambda p: torch.optim.Adam(p, lr=1e-3),
            (torch.randn(128, 1024), torch.randint(0, 10, (128,))))


def cnn_model():
    return (Classifier(resnet18()), lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9),
            (torch.randn(16, 3, 64, 64), torch.randint(0, 100, (16,))))


def gpt_model():
    return (GPTLoss(), lambda p: torch.optim.AdamW(p, lr=1e-3),
            (torch.randint(0, 256, (8, 256)), torch.randint(0, 256, (8, 256))))


def video_model():
    """examples/video_actions.py's (2+1)-D CNN on a batch of 32 clips, channels-last-3d."""
    clips, labels = video_actions.make_clips(6, seed=0)  # 36 clips
    net = video_actions.ActionNet().to(memory_format=torch.channels_last_3d)
    return (Classifier(net), lambda p: torch.optim.AdamW(p, lr=1e-3),
            (clips[:32].contiguous(memory_format=torch.channels_last_3d), labels[:32]))


class DetectionLoss(nn.Module):
    """examples/detection.py's detector and its loss (both stages; roi_align forward and backward)."""

    def __init__(self):
        super().__init__()
        self.detector = detection.Detector()

    def forward(self, images, cls_t, dist_t, rois, roi_targets):
        return detection.losses(self.detector, images, cls_t, dist_t, rois, roi_targets,
                                detection.locations(images.device))


def detection_model():
    images, boxes, labels = detection.make_scenes(32, seed=0)
    targets = [detection.location_targets(b, lab) for b, lab in zip(boxes, labels)]
    rois, roi_targets = detection.jittered_rois(boxes, labels, torch.Generator().manual_seed(0), "cpu")
    return (DetectionLoss(), lambda p: torch.optim.AdamW(p, lr=1e-3),
            (images, torch.stack([t[0] for t in targets]), torch.stack([t[1] for t in targets]), rois, roi_targets))


class FaceLoss(nn.Module):
    """examples/face_recognition.py's embedding network and its ArcFace loss."""

    def __init__(self, identities):
        super().__init__()
        self.net, self.head = face_recognition.FaceNet(), face_recognition.ArcFace(identities)

    def forward(self, photos, labels):
        return self.head(self.net(photos), labels)


def face_model():
    g = torch.Generator().manual_seed(0)
    photos, labels = face_recognition.make_photos(face_recognition.identities(32, g), 4, g)
    return (FaceLoss(32), lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True, weight_decay=5e-4),
            (photos, labels))


class VocoderLoss(nn.Module):
    """examples/speech_synthesis.py's vocoder and its training loss, from the target waveforms."""

    def __init__(self):
        super().__init__()
        self.vocoder = speech_synthesis.Vocoder()
        self.register_buffer("filters", speech_synthesis.mel_filterbank())

    def forward(self, target):
        return speech_synthesis.vocoder_loss(self.vocoder, target, self.filters)


def speech_model():
    return (VocoderLoss(), lambda p: torch.optim.AdamW(p, lr=2e-3, betas=(0.8, 0.99)),
            (speech_synthesis.synthesize(16, seed=0),))


MODELS = {"mlp": mlp_model, "cnn": cnn_model, "gpt": gpt_model, "video": video_model, "detection": detection_model,
          "face": face_model, "speech": speech_model}


def synchronize(device):
    if device == "mlu":
        torch.mlu.synchronize()


class Trainer:
    """One model, its optimizer and its batch on one device; step() queues one training step."""

    def __init__(self, model, make_opt, batch, device, autocast_dtype):
        self.device = device
        self.model = copy.deepcopy(model).to(device)
        self.opt = make_opt(self.model.parameters())
        self.batch = tuple(t.to(device) for t in batch)
        self.autocast_dtype = autocast_dtype

    def step(self):
        with torch.autocast(self.device, dtype=self.autocast_dtype or torch.float32,
                            enabled=self.autocast_dtype is not None):
            loss = self.model(*self.batch)
        loss.backward()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        return loss

    def steps_per_second(self, min_time):
        return steps_per_second(self.step, self.device, min_time)


def steps_per_second(step, device, min_time):
    """Runs batches of step() calls (one synchronize per batch) for at least min_time; the median batch rate."""
    synchronize(device)
    n, rates, spent = 1, [], 0.0
    while spent < min_time or len(rates) < 3:
        start = time.perf_counter()
        for _ in range(n):
            step()
        synchronize(device)
        elapsed = time.perf_counter() - start
        spent += elapsed
        rates.append(n / elapsed)
        if elapsed < 0.5:
            n *= 2
    return statistics.median(rates[1:] if len(rates) > 3 else rates)


def interleaved_rates(steps, min_time, chunk_time=0.3):
    """steps: {device: step function}. Runs chunks of steps on each device in turn (one synchronize per chunk,
    a chunk growing to about chunk_time) until each device has run min_time and 4 chunks; a device's rate is the
    median of its chunks' rates, the first left out. Taking turns exposes both devices to the same swings of a
    shared host (one device measured after the other read 0.9 and 1.4 in two passes of one case), and chunks
    rather than single steps keep the host's dispatch overlapping the device's work, as in training."""
    n = dict.fromkeys(steps, 1)
    rates = {device: [] for device in steps}
    spent = dict.fromkeys(steps, 0.0)
    while min(spent.values()) < min_time or min(len(r) for r in rates.values()) < 4:
        for device, step in steps.items():
            synchronize(device)
            start = time.perf_counter()
            for _ in range(n[device]):
                step()
            synchronize(device)
            elapsed = time.perf_counter() - start
            spent[device] += elapsed
            rates[device].append(n[device] / elapsed)
            if elapsed < chunk_time:
                n[device] = max(n[device] + 1, int(n[device] * chunk_time / elapsed))
    return {device: statistics.median(r[1:]) for device, r in rates.items()}


def model_case(name, autocast_dtype):
    def run(min_time):
        torch.manual_seed(0)
        model, make_opt, batch = MODELS[name]()
        trainers, losses = {}, {}
        for device in ("cpu", "mlu"):
            if device == "mlu":  # the memory of this case only, from a cold cache
                torch.mlu.empty_cache()
                torch.mlu.reset_peak_memory_stats()
            trainers[device] = Trainer(model, make_opt, batch, device, autocast_dtype)
            losses[device] = trainers[device].step().item()  # warm-up: allocator, caches
            trainers[device].step()
        rates = interleaved_rates({device: t.step for device, t in trainers.items()}, min_time)
        # The caching allocator's overhead on the training pattern: peak reserved over peak allocated.
        memory = torch.mlu.max_memory_reserved() / max(torch.mlu.max_memory_allocated(), 1)
        return {"cpu": rates["cpu"], "mlu": rates["mlu"], "ratio": rates["mlu"] / rates["cpu"], "unit": "steps/s",
                "first_loss": losses, "reserved_over_allocated": round(memory, 3)}
    return run


def bert_inference_case(autocast_dtype):
    def run(min_time):
        torch.manual_seed(0)
        model = BertEncoder().eval()
        ids = torch.randint(0, 30522, (64, 32))
        lengths = torch.randint(8, 33, (64,))
        rates, outputs = {}, {}
        for device in ("cpu", "mlu"):
            m = copy.deepcopy(model).to(device)
            batch = (ids.to(device), lengths.to(device))

            def step():
                with torch.inference_mode(), torch.autocast(device, dtype=autocast_dtype or torch.float32,
                                                            enabled=autocast_dtype is not None):
                    return m(*batch)
            outputs[device] = step().float().cpu()  # warm-up
            step()
            rates[device] = steps_per_second(step, device, min_time)
        drift = (outputs["mlu"] - outputs["cpu"]).abs().max().item()
        return {"cpu": rates["cpu"], "mlu": rates["mlu"], "ratio": rates["mlu"] / rates["cpu"],
                "unit": "batches/s", "max_abs_diff": drift}
    return run


def tiny_op_case(min_time):
    us = {}
    for device in ("cpu", "mlu"):
        a, b = torch.ones(16, device=device), torch.ones(16, device=device)
        for _ in range(1000):
            torch.add(a, b)
        synchronize(device)
        samples, spent = [], 0.0
        while spent < min_time or len(samples) < 5:
            start = time.perf_counter()
            for _ in range(10000):
                torch.add(a, b)
            synchronize(device)
            elapsed = time.perf_counter() - start
            spent += elapsed
            samples.append(elapsed / 10000 * 1e6)
        us[device] = statistics.median(samples)
    return {"cpu": us["cpu"], "mlu": us["mlu"], "ratio": us["mlu"] / us["cpu"], "unit": "us/op"}


CASES = {}
for _name in MODELS:
    CASES[f"{_name}_fp32"] = model_case(_name, None)
    CASES[f"{_name}_bf16"] = model_case(_name, torch.bfloat16)
CASES["bert_infer_fp32"] = bert_inference_case(None)
CASES["bert_infer_bf16"] = bert_inference_case(torch.bfloat16)
CASES["tiny_add_host_cost"] = tiny_op_case


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default="*", help="comma-separated glob patterns over the case names")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--min-time", type=float, default=2.0, help="seconds per device and case")
    parser.add_argument("--out", default="benchmarks/results/bench_models.json")
    add_isa_argument(parser)
    args = parser.parse_args()
    isa = isa_report()
    print(f"instruction sets: {isa_label(isa)}; mlu kernels {isa['mlu_kernels_isa']}"
          f"{' + AMX' if isa['mlu_amx'] else ''}, ATen {isa['aten_cpu_capability']}", flush=True)
    names = [n for n in CASES if any(fnmatch.fnmatch(n, p) for p in args.cases.split(","))]
    torch_mlu.reset_fallback_report()
    passes = [[CASES[n](args.min_time) for n in names] for _ in range(args.repeat)]
    results = []
    for i, name in enumerate(names):
        runs = [p[i] for p in passes]
        case = {"case": name, **runs[0]}
        for key in ("cpu", "mlu", "ratio"):
            case[key] = round(statistics.median(r[key] for r in runs), 4)
        case["pass_ratios"] = [round(r["ratio"], 3) for r in runs]
        if "reserved_over_allocated" in runs[0]:
            case["reserved_over_allocated"] = max(r["reserved_over_allocated"] for r in runs)
        results.append(case)
    fallback = torch_mlu.fallback_report()
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"torch": torch.__version__, "machine": platform.processor() or platform.machine(),
                   "isa": isa, "threads": torch.get_num_threads(), "repeat": args.repeat, "fallback": fallback,
                   "cases": results}, f, indent=1)
    print(f"{'case':20s} {'unit':>8s} {'cpu':>9s} {'mlu':>9s} {'ratio':>6s} {'mem':>5s}  passes")
    for c in results:
        memory = f"{c['reserved_over_allocated']:5.2f}" if "reserved_over_allocated" in c else f"{'':5s}"
        print(f"{c['case']:20s} {c['unit']:>8s} {c['cpu']:9.2f} {c['mlu']:9.2f} {c['ratio']:6.2f} {memory}  "
              f"{c['pass_ratios']}")
    print("mem: peak reserved / peak allocated on mlu over the case's training steps (worst pass)")
    print(f"ops that fell back to the CPU: {fallback or 'none'}")


if __name__ == "__main__":
    main()
