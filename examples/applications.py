"""What the application examples share: their command line, progress bar, fallback report and picture output.

detection.py, video_actions.py, face_recognition.py and speech_synthesis.py each train on mlu and on the CPU
from the same data and seed, state a held-out result (and a looser one under --fast, CI's run), print the ops
that went through the CPU fallback and draw a picture; this module keeps those parts the same in all four.
"""
import argparse
import sys

from tqdm import tqdm


def argument_parser(doc, plot, fast_help):
    """The options every application takes; each adds its own (epochs, sizes, learning rate)."""
    p = argparse.ArgumentParser(description=" ".join(doc.split("\n\n")[0].split()))
    p.add_argument("--devices", nargs="+", default=["mlu", "cpu"], help="devices to train on (default: mlu cpu)")
    p.add_argument("--fast", action="store_true", help=fast_help)
    p.add_argument("--plot", default=plot, help=f"where to write the picture (default {plot}; '' to skip)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--seed", type=int, default=0)
    return p


def parse_options(parser, argv, defaults, fast):
    """The common options and the example's own: one `--name` per entry of `defaults` (dashes for underscores),
    typed by its default value; under --fast (CI's run) the values of `fast` replace those of the command line."""
    for name, value in defaults.items():
        parser.add_argument("--" + name.replace("_", "-"), type=type(value), default=value, help=f"default {value}")
    args = parser.parse_args(argv)
    if args.fast:
        for name, value in fast.items():
            setattr(args, name, value)
    return args


def progress(total, desc, quiet):
    return tqdm(total=total, desc=desc, unit="step", file=sys.stdout, dynamic_ncols=True, disable=quiet)


def optimizer_step(loss, opt, schedule, bar):
    """Back-propagates loss, steps the optimizer and its learning-rate schedule, and shows the loss on the bar."""
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    schedule.step()
    bar.update()
    bar.set_postfix(loss=f"{loss.item():.3f}")


def report_fallback(fell_back):
    print("ops that ran through the CPU fallback: " + (", ".join(sorted(fell_back)) or "none"))


def pyplot():
    """matplotlib.pyplot drawing off screen."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    pyplot().close(fig)


def check_stated(name, what, scores, stated, lower_is_better=False):
    """Exits with an error where a device but the CPU (the reference run) misses the stated result.

    scores: {device: score}; stated: the bound, printed as `what` of it (e.g. "mAP@0.5", "accuracy"); a score
    must reach it from above where lower_is_better (a distance), from below otherwise.
    """
    missed = [device for device, score in scores.items()
              if (score > stated if lower_is_better else score < stated) and device != "cpu"]
    if missed:
        side = "above" if lower_is_better else "below"
        raise SystemExit(f"{name}: {what} {side} the stated {stated} on {', '.join(missed)}")
    print(f"{name}: every device reaches the stated {what} of {stated}")
