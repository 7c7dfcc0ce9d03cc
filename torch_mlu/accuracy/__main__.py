"""python -m torch_mlu.accuracy compare A B [--threshold T] [--png FILE] [--step N] [--top N]

Compares two dumps written by torch_mlu.accuracy.dump (run B is the reference, e.g. the CPU's): prints the first
divergence above the threshold and the largest ones, by module; --png plots each module's relative error at one
step. Exit status 1 when a record diverges.
"""
import argparse
import sys

from ._compare_dumps import compare_dumps, plot


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m torch_mlu.accuracy", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    compare = commands.add_parser("compare", help="compare two dumps")
    compare.add_argument("run_a")
    compare.add_argument("run_b", help="the reference run")
    compare.add_argument("--threshold", type=float, default=1e-3, help="relative error counted as a divergence")
    compare.add_argument("--png", help="write a plot of the relative error per module here")
    compare.add_argument("--step", type=int, default=0, help="the step the plot shows")
    compare.add_argument("--top", type=int, default=10, help="how many of the largest errors to list")
    args = parser.parse_args(argv)
    comparison = compare_dumps(args.run_a, args.run_b, args.threshold)
    print(comparison.table(args.top))
    if args.png:
        plot(comparison, args.png, args.step)
        print(f"plot: {args.png}")
    return 1 if comparison.first else 0


if __name__ == "__main__":
    sys.exit(main())
