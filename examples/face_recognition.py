"""Face recognition: an ArcFace-trained embedding network on procedurally generated identities, trained on mlu;
states its held-out verification rate (TAR at a FAR of 1%) on identities it never saw.

An identity is a set of facial proportions and colours: the face oval's width and height, skin and hair tone
and hairline, eye spacing, height and size, brow slant, nose length and width, mouth width, height and smile.
Each photo of an identity varies in pose (rotation, scale, shift), lighting (a gradient from a random side),
contrast, sensor noise and, sometimes, a bar occluding part of the face. A small residual CNN maps a 40x40
photo to a 64-dimensional unit vector; training is classification of the training identities through an
additive angular margin (ArcFace, Deng et al. 2019: the target logit is s cos(theta + m)). Verification
compares embeddings by cosine similarity over every pair of photos of held-out identities: the true accept
rate at a 1% false accept rate is stated and checked; the ROC goes to a PNG.

    .venv/bin/python examples/face_recognition.py [--devices mlu cpu] [--epochs 14] [--fast] [--plot ...]
"""
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_mlu
from applications import (argument_parser, check_stated, optimizer_step, parse_options, progress, pyplot,
                          report_fallback, save)

STATED_TAR = 0.95  # full run: true accept rate at FAR 1% on held-out identities
STATED_TAR_FAST = 0.5  # --fast
SIZE, EMBEDDING = 40, 64


# ---- identities and photos ----

def identities(n, g):
    """[n, 16] identity parameters in [0, 1]."""
    return torch.rand(n, 16, generator=g)


def ellipse(xx, yy, cx, cy, rx, ry):
    return ((xx - cx) / rx) ** 2 + ((yy - cy) / ry) ** 2 <= 1


def render(p, g):
    """A [3, SIZE, SIZE] photo of identity p, posed, lit and noised at random."""
    c = torch.linspace(-1, 1, 64)
    yy, xx = torch.meshgrid(c, c, indexing="ij")
    skin = torch.tensor([0.55, 0.4, 0.3]) + 0.4 * p[0:3] * torch.tensor([1.0, 0.9, 0.8])
    hair = 0.1 + 0.6 * p[3] * torch.tensor([1.0, 0.8, 0.6])
    image = torch.full((3, 64, 64), 0.0) + (0.2 + 0.3 * torch.rand(3, 1, 1, generator=g))  # background
    face_rx, face_ry = 0.55 + 0.2 * p[4], 0.7 + 0.2 * p[5]
    face = ellipse(xx, yy, 0, 0.05, face_rx, face_ry)
    image[:, face] = skin[:, None]
    hairline = -0.75 + 0.35 * p[6]
    image[:, face & (yy < hairline)] = hair[:, None]
    eye_dx, eye_y, eye_r = 0.18 + 0.17 * p[7], -0.2 + 0.2 * p[8], 0.07 + 0.06 * p[9]
    for side in (-1, 1):
        image[:, ellipse(xx, yy, side * eye_dx, eye_y, eye_r * 1.5, eye_r)] = torch.tensor([0.95, 0.95, 0.95])[:, None]
        image[:, ellipse(xx, yy, side * eye_dx, eye_y, eye_r * 0.6, eye_r * 0.6)] = (0.1 + 0.3 * p[10])
        slant = (p[11] - 0.5) * 0.3
        brow = ((yy - (eye_y - 2.2 * eye_r) - slant * side * (xx - side * eye_dx)).abs() < 0.03) & \
            ((xx - side * eye_dx).abs() < eye_r * 1.8)
        image[:, brow] = hair[:, None]
    nose_len, nose_w = 0.15 + 0.2 * p[12], 0.04 + 0.06 * p[13]
    nose = ((xx.abs() < nose_w * (yy - eye_y) / nose_len) & (yy > eye_y) & (yy < eye_y + nose_len))
    image[:, nose] = (skin * 0.8)[:, None]
    mouth_y, mouth_w, smile = eye_y + nose_len + 0.15 + 0.1 * p[14], 0.15 + 0.2 * p[15], (p[14] - 0.5) * 0.8
    mouth = ((yy - mouth_y - smile * xx ** 2).abs() < 0.035) & (xx.abs() < mouth_w)
    image[:, mouth] = torch.tensor([0.6, 0.15, 0.2])[:, None]
    # Pose: rotation, scale and shift; light: a gradient from a random side; contrast; noise; an occluder.
    angle = 0.25 * torch.randn((), generator=g)
    scale = 1 + 0.1 * torch.randn((), generator=g)
    shift = 0.08 * torch.randn(2, generator=g)
    theta = torch.stack([torch.stack([scale * torch.cos(angle), -scale * torch.sin(angle), shift[0]]),
                         torch.stack([scale * torch.sin(angle), scale * torch.cos(angle), shift[1]])])
    grid = F.affine_grid(theta[None], (1, 3, SIZE, SIZE), align_corners=False)
    photo = F.grid_sample(image[None], grid, padding_mode="border", align_corners=False)[0]
    light = torch.rand((), generator=g) * 2 * math.pi
    cs = torch.linspace(-1, 1, SIZE)
    ly, lx = torch.meshgrid(cs, cs, indexing="ij")
    photo = photo * (0.75 + 0.35 * torch.rand((), generator=g) + 0.3 * (math.cos(light) * lx + math.sin(light) * ly))
    if torch.rand((), generator=g) < 0.25:
        y0 = int(torch.randint(0, SIZE - 6, (), generator=g))
        photo[:, y0:y0 + 5] = 0.2 * torch.rand(3, 1, 1, generator=g)
    return (photo + 0.05 * torch.randn(photo.shape, generator=g)).clamp(0, 1)


def make_photos(params, per_identity, g):
    photos = torch.stack([render(p, g) for p in params for _ in range(per_identity)])
    return photos, torch.arange(len(params)).repeat_interleave(per_identity)


# ---- model ----

class Block(nn.Module):
    def __init__(self, c_in, c_out, stride):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False), nn.BatchNorm2d(c_out),
                                  nn.PReLU(c_out), nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False), nn.BatchNorm2d(c_out))
        self.skip = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))

    def forward(self, x):
        return F.relu(self.body(x) + self.skip(x))


class FaceNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 32, 3, 1, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU(),
                                      Block(32, 48, 2), Block(48, 64, 2), Block(64, 96, 2))  # 5x5
        self.embed = nn.Sequential(nn.Flatten(), nn.Dropout(0.2), nn.Linear(96 * 25, EMBEDDING),
                                   nn.BatchNorm1d(EMBEDDING))

    def forward(self, photos):
        return F.normalize(self.embed(self.features(photos)), dim=1)


class ArcFace(nn.Module):
    """The additive angular margin head: cross-entropy over s cos(theta_j), with theta_y + m for the target."""

    def __init__(self, n_classes, scale=16.0, margin=0.3):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n_classes, EMBEDDING) * 0.01)
        self.scale, self.margin = scale, margin

    def forward(self, embeddings, labels):
        # In float32 whatever autocast gave the product: the margin's acos/cos are float32 under autocast.
        cosine = (embeddings @ F.normalize(self.weight, dim=1).t()).float()
        target = cosine.gather(1, labels[:, None]).clamp(-1 + 1e-6, 1 - 1e-6)
        # cos(theta + m), falling back to a linear penalty past theta = pi - m (ArcFace's easy-margin rule).
        with_margin = torch.where(target > math.cos(math.pi - self.margin),
                                  torch.cos(torch.acos(target) + self.margin),
                                  target - self.margin * math.sin(self.margin))
        logits = cosine.scatter(1, labels[:, None], with_margin) * self.scale
        return F.cross_entropy(logits, labels)


def roc(similarity, same):
    """(false accept rates, true accept rates) over every threshold, from pair similarities and labels."""
    order = similarity.argsort(descending=True)
    same = same[order].double()
    tar = same.cumsum(0) / same.sum()
    far = (1 - same).cumsum(0) / (1 - same).sum()
    return far, tar


def tar_at(far, tar, target_far):
    return float(tar[far <= target_far].max()) if bool((far <= target_far).any()) else 0.0


def fit(device, args):
    g = torch.Generator().manual_seed(args.seed)
    train_photos, train_labels = make_photos(identities(args.train_identities, g), args.photos, g)
    test_photos, test_labels = make_photos(identities(args.test_identities, g), args.photos, g)
    torch.manual_seed(args.seed)
    model, head = FaceNet().to(device), ArcFace(args.train_identities).to(device)
    params = list(model.parameters()) + list(head.parameters())
    steps_per_epoch = math.ceil(len(train_labels) / args.batch_size)
    opt = torch.optim.SGD(params, lr=args.lr, momentum=0.9, weight_decay=5e-4, nesterov=True)
    schedule = torch.optim.lr_scheduler.OneCycleLR(opt, args.lr, total_steps=args.epochs * steps_per_epoch)
    order = torch.Generator().manual_seed(args.seed)
    torch_mlu.reset_fallback_report()
    start = time.perf_counter()
    bar = progress(args.epochs * steps_per_epoch, f"faces on {device}", args.quiet)
    for _ in range(args.epochs):
        model.train()
        for batch in torch.randperm(len(train_labels), generator=order).split(args.batch_size):
            photos = train_photos[batch].to(device)
            flip = torch.rand(len(batch), generator=order) < 0.5  # faces are left-right symmetric enough
            photos = torch.where(flip.to(device)[:, None, None, None], photos.flip(3), photos)
            loss = head(model(photos), train_labels[batch].to(device))
            optimizer_step(loss, opt, schedule, bar)
    bar.close()
    model.eval()
    with torch.no_grad():
        embeddings = torch.cat([(model(x.to(device)) + model(x.to(device).flip(3))).cpu()
                                for x in test_photos.split(256)])
    embeddings = F.normalize(embeddings, dim=1)
    seconds = time.perf_counter() - start
    i, j = torch.triu_indices(len(test_labels), len(test_labels), 1)
    similarity = (embeddings[i] * embeddings[j]).sum(1)
    far, tar = roc(similarity, test_labels[i] == test_labels[j])
    return tar_at(far, tar, 1e-2), tar_at(far, tar, 1e-3), (far, tar), seconds, torch_mlu.fallback_report()


def plot(path, curves):
    fig, ax = pyplot().subplots(figsize=(4.6, 3.6))
    for device, (far, tar) in curves.items():
        ax.plot(far.clamp(min=1e-5), tar, label=device)
    ax.axvline(1e-2, color="grey", lw=0.8, ls="--")
    ax.set_xscale("log")
    ax.set_xlim(1e-4, 1)
    ax.set_ylim(0, 1.01)
    ax.set_xlabel("false accept rate")
    ax.set_ylabel("true accept rate")
    ax.set_title("verification on held-out identities", fontsize=9)
    ax.legend(fontsize=8)
    save(fig, path)


def parse_args(argv=None):
    p = argument_parser(__doc__, "face_recognition.png", "CI's run: fewer identities and epochs, a looser stated rate")
    p.add_argument("--photos", type=int, default=12, help="photos per identity")
    return parse_options(p, argv, dict(epochs=14, batch_size=64, lr=0.1, train_identities=300, test_identities=60),
                         fast=dict(epochs=10, train_identities=100, test_identities=30, photos=10))


def main(argv=None):
    args = parse_args(argv)
    stated = STATED_TAR_FAST if args.fast else STATED_TAR
    results, curves = {}, {}
    for device in args.devices:
        tar2, tar3, curve, seconds, fell_back = fit(device, args)
        results[device] = (tar2, tar3, fell_back)
        curves[device] = curve
        print(f"faces on {device:>4}: held-out TAR {tar2:.3f} at FAR 1e-2, {tar3:.3f} at FAR 1e-3 "
              f"({args.test_identities} unseen identities, {args.epochs} epochs, {seconds:.1f} s)")
        if device.startswith("mlu"):
            report_fallback(fell_back)
    if args.plot:
        plot(args.plot, curves)
        print(f"ROC drawn to {args.plot}")
    check_stated("faces", "TAR at FAR 1e-2", {d: r[0] for d, r in results.items()}, stated)
    return results


if __name__ == "__main__":
    main()
