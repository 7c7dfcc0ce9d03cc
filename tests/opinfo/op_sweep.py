"""What the op_db sweeps run as scripts share (device_sweep.py, layout_sweep.py): the dtype each op is swept in,
the JSON lines they print, and the command line that picks ops."""
import argparse
import json
import warnings

import torch

from torch.testing._internal.common_methods_invocations import op_db


def pick_dtype(op):
    """float32 where the op takes it, else the first of int64, bool, complex64 it takes (None: none)."""
    dtypes = op.supported_dtypes("cpu")
    for dtype in (torch.float32, torch.int64, torch.bool, torch.complex64):
        if dtype in dtypes:
            return dtype
    return None


def emit(**fields):
    print(json.dumps(fields), flush=True)


def main(description, sweep_op, default_samples):
    """Runs sweep_op(op, samples) over op_db (or the ops named by --ops), then prints {"done": true}."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--ops", default="", help="comma-separated op_db names (default: all)")
    parser.add_argument("--samples", type=int, default=default_samples, help="samples per op")
    parser.add_argument("--samples-of", action="append", default=[], metavar="OP=N",
                        help="another number of samples for one op (repeatable)")
    args = parser.parse_args()
    wanted = set(filter(None, args.ops.split(",")))
    samples_of = {op: int(n) for op, n in (item.rsplit("=", 1) for item in args.samples_of)}
    warnings.simplefilter("ignore")
    torch.manual_seed(0)
    for op in op_db:
        name = op.full_name if hasattr(op, "full_name") else op.name
        if wanted and name not in wanted and op.name not in wanted:
            continue
        sweep_op(op, samples_of.get(name, samples_of.get(op.name, args.samples)))
    emit(done=True)
