"""Speech synthesis: a small neural vocoder (log-mel spectrogram -> waveform) trained on mlu on synthetic
speech-like signals; states its held-out spectral convergence and log-mel distance.

The signals are what a source-filter model of speech makes, at 8 kHz: voiced stretches (a glottal pulse train's
harmonics under a wandering pitch contour, shaped by three formant resonances that move between vowel-like
positions) alternating with unvoiced ones (noise bursts, high-passed like fricatives), under a syllable-rate
loudness envelope. The vocoder is HiFi-GAN-shaped and small: a 1-D convolution over the 40-band log-mel frames,
three transposed 1-D convolutions upsampling by 4, 4 and 8 (the hop of 128 samples), each followed by a
residual block of dilated convolutions, and a tanh output. It trains on HiFi-GAN's generator loss without the
discriminators: a multi-resolution STFT loss (spectral convergence plus log-magnitude distance at three FFT sizes;
Yamamoto et al. 2020) and the log-mel L1 distance. The script prints, on held-out signals, the mean log-mel
distance (the stated result: |log-mel power difference|, natural log, averaged over bands and frames) and the
spectral convergence ||S - S'|| / ||S|| of the generated waveform against the target's (and an untrained
vocoder's, for scale), the ops that went through the CPU fallback (none, on mlu); it writes a WAV of target and
generated speech in turn and a PNG of their spectrograms. (Spectral convergence stays near 0.7: the unvoiced
stretches are noise, whose bins no vocoder can match one by one; two independent noises of one spectrum are
about 0.66 apart by that measure.)

    .venv/bin/python examples/speech_synthesis.py [--devices mlu cpu] [--steps 1500] [--fast]
        [--plot speech_synthesis.png] [--wav speech_synthesis.wav]
"""
import array
import math
import time
import wave

import torch
import torch.nn as nn
import torch.nn.functional as F
from applications import (argument_parser, check_stated, optimizer_step, parse_options, progress, pyplot,
                          report_fallback, save)

import torch_mlu

STATED_DISTANCE = 0.8  # full run: held-out log-mel distance at most this
STATED_DISTANCE_FAST = 1.0  # --fast
SAMPLE_RATE, LENGTH = 8000, 4096  # about half a second
N_FFT, HOP, N_MELS = 512, 128, 40
RESOLUTIONS = ((128, 32), (256, 64), (512, 128))  # (FFT size, hop) of the STFT loss


def formant_gain(freq, formants, bandwidths):
    """Magnitude of three second-order resonances at freq (Hz), [..., 3] centres and bandwidths."""
    f = freq[..., None]
    return (1 / torch.sqrt((1 - (f / formants) ** 2) ** 2 + (f * bandwidths / formants ** 2) ** 2)).sum(-1)


def synthesize(n, seed):
    """[n, LENGTH] speech-like waveforms in [-1, 1]."""
    g = torch.Generator().manual_seed(seed)
    t = torch.arange(LENGTH, dtype=torch.float64) / SAMPLE_RATE
    signals = []
    for _ in range(n):
        f0 = (90 + 150 * torch.rand((), generator=g)) * (1 + 0.15 * torch.sin(
            2 * math.pi * (1 + 3 * torch.rand((), generator=g)) * t + 6 * torch.rand((), generator=g)))
        # Formants glide between two vowel-like positions.
        start = torch.tensor([500.0, 1500, 2500]) * (0.8 + 0.4 * torch.rand(3, generator=g))
        end = torch.tensor([500.0, 1500, 2500]) * (0.8 + 0.4 * torch.rand(3, generator=g))
        mix = (0.5 - 0.5 * torch.cos(math.pi * t / t[-1]))[:, None]
        formants = (start + (end - start) * mix).double()
        bandwidths = torch.tensor([80.0, 120, 160], dtype=torch.float64)
        phase = 2 * math.pi * torch.cumsum(f0, 0) / SAMPLE_RATE
        voiced = torch.zeros(LENGTH, dtype=torch.float64)
        for k in range(1, int(SAMPLE_RATE / 2 / 90)):
            harmonic = k * f0
            gain = torch.where(harmonic < SAMPLE_RATE / 2 - 200, formant_gain(harmonic, formants, bandwidths), 0)
            voiced += gain * torch.sin(k * phase) / k ** 0.5
        voiced /= voiced.abs().max()
        noise = torch.randn(LENGTH, generator=g, dtype=torch.float64)
        fricative = noise - F.avg_pool1d(noise[None, None], 5, 1, 2)[0, 0]  # high-passed
        # Voiced and unvoiced stretches, syllable-rate loudness.
        rate = 3 + 3 * torch.rand((), generator=g)
        gate = torch.sigmoid(12 * torch.sin(2 * math.pi * rate * t + 6 * torch.rand((), generator=g)))
        loudness = 0.6 + 0.4 * torch.sin(2 * math.pi * rate / 2 * t) ** 2
        x = loudness * (gate * voiced + (1 - gate) * 0.35 * fricative)
        signals.append((0.8 * x / x.abs().max()).float())
    return torch.stack(signals)


def mel_filterbank(n_freqs=N_FFT // 2 + 1, n_mels=N_MELS):
    """Triangular filters evenly spaced on the mel scale (HTK's formula), [n_freqs, n_mels]."""
    to_mel = lambda hz: 2595 * math.log10(1 + hz / 700)  # noqa: E731
    mels = torch.linspace(to_mel(0), to_mel(SAMPLE_RATE / 2), n_mels + 2, dtype=torch.float64)
    hz = 700 * (10 ** (mels / 2595) - 1)
    freqs = torch.linspace(0, SAMPLE_RATE / 2, n_freqs, dtype=torch.float64)
    rising = (freqs[:, None] - hz[:-2]) / (hz[1:-1] - hz[:-2])
    falling = (hz[2:] - freqs[:, None]) / (hz[2:] - hz[1:-1])
    return torch.clamp(torch.minimum(rising, falling), min=0).float()


def log_mel(x, filters):
    """[B, N_MELS, LENGTH / HOP] log-mel power frames of waveforms [B, LENGTH]."""
    window = torch.hann_window(N_FFT, device=x.device)
    spec = torch.stft(x, N_FFT, HOP, window=window, center=True, return_complex=True)[..., :LENGTH // HOP]
    return torch.log(torch.clamp((spec.abs() ** 2).transpose(1, 2) @ filters, min=1e-5)).transpose(1, 2)


def stft_magnitude(x, n_fft, hop):
    window = torch.hann_window(n_fft, device=x.device)
    return torch.stft(x, n_fft, hop, window=window, return_complex=True).abs().clamp(min=1e-7)


def multi_resolution_stft_loss(generated, target):
    """Spectral convergence plus log-magnitude L1, averaged over RESOLUTIONS."""
    total = 0
    for n_fft, hop in RESOLUTIONS:
        s, s_hat = stft_magnitude(target, n_fft, hop), stft_magnitude(generated, n_fft, hop)
        convergence = torch.linalg.norm(s - s_hat, dim=(1, 2)) / torch.linalg.norm(s, dim=(1, 2))
        total = total + convergence.mean() + F.l1_loss(torch.log(s_hat), torch.log(s))
    return total / len(RESOLUTIONS)


def vocoder_loss(model, target, filters):
    """HiFi-GAN's generator loss without its discriminators: the multi-resolution STFT loss and the log-mel L1
    distance of what the vocoder makes of the target's log-mel spectrogram."""
    mel = log_mel(target, filters)
    generated = model(mel)
    return multi_resolution_stft_loss(generated, target) + F.l1_loss(log_mel(generated, filters), mel)


class ResidualBlock(nn.Module):
    """Dilated convolutions with leaky ReLUs and skip connections (HiFi-GAN's ResBlock)."""

    def __init__(self, channels, kernel=3, dilations=(1, 3, 9)):
        super().__init__()
        self.convs = nn.ModuleList(nn.Conv1d(channels, channels, kernel, dilation=d, padding=d * (kernel - 1) // 2)
                                   for d in dilations)

    def forward(self, x):
        for conv in self.convs:
            x = x + conv(F.leaky_relu(x, 0.1))
        return x


class Vocoder(nn.Module):
    def __init__(self, width=128, strides=(4, 4, 8)):
        super().__init__()
        self.pre = nn.Conv1d(N_MELS, width, 7, padding=3)
        ups, blocks, channels = [], [], width
        for stride in strides:
            ups.append(nn.ConvTranspose1d(channels, channels // 2, 2 * stride, stride, padding=stride // 2))
            channels //= 2
            blocks.append(ResidualBlock(channels))
        self.ups, self.blocks = nn.ModuleList(ups), nn.ModuleList(blocks)
        self.post = nn.Conv1d(channels, 1, 7, padding=3)

    def forward(self, mel):
        x = self.pre(mel)
        for up, block in zip(self.ups, self.blocks):
            x = block(up(F.leaky_relu(x, 0.1)))
        return torch.tanh(self.post(F.leaky_relu(x, 0.1))).squeeze(1)


@torch.no_grad()
def evaluate(model, signals, filters, device):
    """(spectral convergence at N_FFT, mean |log-mel difference|, generated waveforms) on held-out signals."""
    model.eval()
    generated = torch.cat([model(log_mel(x.to(device), filters)).cpu() for x in signals.split(32)])
    s, s_hat = stft_magnitude(signals, N_FFT, HOP), stft_magnitude(generated, N_FFT, HOP)
    convergence = (torch.linalg.norm(s - s_hat, dim=(1, 2)) / torch.linalg.norm(s, dim=(1, 2))).mean().item()
    cpu_filters = filters.cpu()
    distance = (log_mel(generated, cpu_filters) - log_mel(signals, cpu_filters)).abs().mean().item()
    return convergence, distance, generated


def fit(device, args):
    train, test = synthesize(args.train_signals, args.seed), synthesize(args.test_signals, args.seed + 1)
    filters = mel_filterbank().to(device)
    torch.manual_seed(args.seed)
    model = Vocoder().to(device)
    untrained = evaluate(model, test, filters, device)[:2]
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.8, 0.99))
    schedule = torch.optim.lr_scheduler.OneCycleLR(opt, args.lr, total_steps=args.steps)
    order = torch.Generator().manual_seed(args.seed)
    torch_mlu.reset_fallback_report()
    start = time.perf_counter()
    model.train()
    bar = progress(args.steps, f"vocoder on {device}", args.quiet)
    for _ in range(args.steps):
        batch = torch.randint(0, len(train), (args.batch_size,), generator=order)
        target = train[batch].to(device)
        loss = vocoder_loss(model, target, filters)
        optimizer_step(loss, opt, schedule, bar)
    bar.close()
    convergence, distance, generated = evaluate(model, test, filters, device)
    seconds = time.perf_counter() - start
    return convergence, distance, untrained, generated, test, seconds, torch_mlu.fallback_report()


def write_wav(path, target, generated, n=3):
    """Target then generated, for n held-out signals, with 0.2 s of silence between."""
    gap = torch.zeros(SAMPLE_RATE // 5)
    audio = torch.cat([torch.cat([target[i], gap, generated[i], gap, gap]) for i in range(n)])
    with wave.open(path, "wb") as f:
        f.setnchannels(1)
        f.setsampwidth(2)
        f.setframerate(SAMPLE_RATE)
        f.writeframes(array.array("h", (audio.clamp(-1, 1) * 32767).to(torch.int16).tolist()).tobytes())


def plot(path, target, generated, distance, convergence, n=3):
    filters = mel_filterbank()
    fig, axes = pyplot().subplots(2, n, figsize=(3.2 * n, 4.4), sharey=True)
    for i in range(n):
        for row, (name, x) in enumerate((("target", target), ("generated on mlu", generated))):
            axes[row, i].imshow(log_mel(x[i:i + 1], filters)[0], origin="lower", aspect="auto", cmap="magma")
            axes[row, i].set_title(f"{name} #{i}", fontsize=8)
            axes[row, i].set_xlabel("frame (16 ms)", fontsize=7)
        axes[0, i].set_ylabel("mel band", fontsize=7)
        axes[1, i].set_ylabel("mel band", fontsize=7)
    fig.suptitle(f"held-out log-mel spectrograms: log-mel distance {distance:.3f}, spectral convergence "
                 f"{convergence:.3f}", fontsize=9)
    save(fig, path)


def parse_args(argv=None):
    p = argument_parser(__doc__, "speech_synthesis.png", "CI's run: fewer steps and signals, a looser stated distance")
    p.add_argument("--wav", default="speech_synthesis.wav", help="the WAV of target and generated ('' to skip)")
    return parse_options(p, argv, dict(steps=1500, batch_size=16, lr=2e-3, train_signals=256, test_signals=32),
                         fast=dict(steps=300, train_signals=64, test_signals=16))


def main(argv=None):
    args = parse_args(argv)
    stated = STATED_DISTANCE_FAST if args.fast else STATED_DISTANCE
    results = {}
    for device in args.devices:
        convergence, distance, untrained, generated, test, seconds, fell_back = fit(device, args)
        results[device] = (distance, convergence, untrained, fell_back)
        print(f"vocoder on {device:>4}: held-out log-mel distance {distance:.3f}, spectral convergence "
              f"{convergence:.3f} (untrained: {untrained[1]:.3f}, {untrained[0]:.3f}; {args.steps} steps, "
              f"{seconds:.1f} s)")
        if device.startswith("mlu"):
            report_fallback(fell_back)
            if args.plot:
                plot(args.plot, test, generated, distance, convergence)
                print(f"spectrograms drawn to {args.plot}")
            if args.wav:
                write_wav(args.wav, test, generated)
                print(f"target and generated speech written to {args.wav}")
    check_stated("vocoder", "log-mel distance", {d: r[0] for d, r in results.items()}, stated, lower_is_better=True)
    return results


if __name__ == "__main__":
    main()
