"""cncl across hosts: network namespaces joined by a switch, one torchrun node per host (tools/netns_hosts.py).

    python benchmarks/bench_multihost.py [--hosts 2] [--rate 10gbit] [--delay-us 100] [--runs 3]
        [--out build/bench_multihost.json]

all_reduce bus bandwidth (2 (n - 1) / n x bytes / time, NCCL's convention) between the hosts over the shaped
link, for cncl (mlu tensors) and the same group's Gloo (CPU tensors), 1 to 64 MB; and DDP scaling: GPT-mini steps
per second on one host (one process) against --hosts hosts (the same batch per rank), so throughput scaling =
hosts x (one-host step time / multi-host step time). Needs root (network namespaces); results in
docs/distributed.md. Each host's link is shaped with tc netem (delay and rate) where the kernel has it, else the
rate alone with tbf (the output says which).
"""
import argparse
import json
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
from netns_hosts import Hosts  # noqa: E402

WORKER = os.path.join(ROOT, "benchmarks", "multihost_worker.py")


def run(hosts, argv, folder):
    out = os.path.join(folder, "out.json")
    runs = hosts.torchrun_all([WORKER, *argv, "--out", out], timeout=900, cwd=folder)
    if any(code != 0 for code, _ in runs):
        raise RuntimeError("a host failed:\n\n" + "\n\n".join(log for _, log in runs))
    with open(out) as f:
        return json.load(f)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=2)
    parser.add_argument("--rate", default="10gbit")
    parser.add_argument("--delay-us", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", default="build/bench_multihost.json")
    args = parser.parse_args()
    why = Hosts.unavailable()
    if why:
        sys.exit(f"bench_multihost: {why}")
    result = {"host": os.uname().nodename, "cores": os.cpu_count(), "hosts": args.hosts}
    with tempfile.TemporaryDirectory() as folder, Hosts(args.hosts, args.delay_us, args.rate) as hosts:
        result["shaping"] = hosts.shaping
        runs = ["--runs", str(args.runs)]
        result["allreduce"] = run(hosts, ["--what", "allreduce", *runs], folder)["result"]
        with Hosts(1) as one:
            result["ddp_one_host"] = run(one, ["--what", "ddp", *runs], folder)["result"]
        result["ddp_hosts"] = run(hosts, ["--what", "ddp", *runs], folder)["result"]
    n = args.hosts
    print(f"{n} hosts, links: {result['shaping']}")
    print(f"{'bytes':>10} {'cpu GB/s':>9} {'mlu GB/s':>9} {'mlu/cpu':>8}")
    for row in result["allreduce"]:
        factor = 2 * (n - 1) / n
        row["cpu_busbw_GBps"] = factor * row["bytes"] / row["cpu_s"] / 1e9
        row["mlu_busbw_GBps"] = factor * row["bytes"] / row["mlu_s"] / 1e9
        print(f"{row['bytes']:>10} {row['cpu_busbw_GBps']:>9.3f} {row['mlu_busbw_GBps']:>9.3f} "
              f"{row['mlu_busbw_GBps'] / row['cpu_busbw_GBps']:>8.2f}")
    one, many = result["ddp_one_host"]["s_per_step"], result["ddp_hosts"]["s_per_step"]
    result["ddp_scaling"] = n * one / many
    print(f"DDP GPT-mini: 1 host {one * 1e3:.1f} ms/step, {n} hosts {many * 1e3:.1f} ms/step: "
          f"throughput x{result['ddp_scaling']:.2f} (ideal {n})")
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
