"""An MLP classifying scikit-learn's handwritten digits on mlu and on the CPU; states >= 96% held-out accuracy.

    .venv/bin/python examples/mlp_digits.py [--devices mlu cpu] [--epochs 40]
"""
import torch.nn as nn

from digits import parse_args, report

STATED_ACCURACY = 0.96


def make_mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 256), nn.ReLU(), nn.Dropout(0.1), nn.Linear(256, 128),
                         nn.ReLU(), nn.Linear(128, 10))


def main(argv=None):
    return report("MLP", make_mlp, parse_args(__doc__.splitlines()[0], epochs=40, argv=argv), STATED_ACCURACY)


if __name__ == "__main__":
    main()
