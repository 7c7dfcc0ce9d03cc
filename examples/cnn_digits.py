"""A small CNN classifying scikit-learn's handwritten digits on mlu and on the CPU; states >= 97% held-out
accuracy.

    .venv/bin/python examples/cnn_digits.py [--devices mlu cpu] [--epochs 25]
"""
import torch.nn as nn

from digits import parse_args, report

STATED_ACCURACY = 0.97


def make_cnn():
    def conv(cin, cout):
        return [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU()]

    return nn.Sequential(*conv(1, 32), *conv(32, 32), nn.MaxPool2d(2),  # 8x8 -> 4x4
                         *conv(32, 64), *conv(64, 64), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Dropout(0.2), nn.Linear(64, 10))


def main(argv=None):
    return report("CNN", make_cnn, parse_args(__doc__.splitlines()[0], epochs=25, argv=argv), STATED_ACCURACY)


if __name__ == "__main__":
    main()
