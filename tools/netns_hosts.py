"""Hosts on one machine: network namespaces joined by a switch, each with its own address and a shaped link.

Used by tests/test_distributed_multihost.py and benchmarks/bench_multihost.py to run torchrun --nnodes N across
"hosts" that reach each other only over their links (veth pairs to a bridge in a switch namespace), with
`tc netem` shaping each host's outgoing traffic (delay, rate). Nothing leaves the namespaces: the addresses are
private (10.213.0.0/24), and the namespaces (and with them every link) are deleted on exit.

    with Hosts(2, delay_us=100, rate="10gbit") as hosts:
        procs = [hosts.popen(i, ["python", "-m", "torch.distributed.run", ...]) for i in range(2)]

Needs root (or CAP_NET_ADMIN) and iproute2; `Hosts.unavailable()` says why not, for a skip.
"""
import os
import shutil
import subprocess

SUBNET = "10.213.0"
INTERFACE = "eth0"  # each host's link, as the processes see it (GLOO_SOCKET_IFNAME)


def _ip(*args, check=True):
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check, timeout=30)


class Hosts:
    _made = 0  # instances so far in this process: each one's namespaces get names of their own
    def __init__(self, count, delay_us=None, rate=None):
        self.count = count
        self.delay_us = delay_us
        self.rate = rate
        Hosts._made += 1
        tag = f"{os.getpid() % 100000}x{Hosts._made}"
        self.switch = f"mlusw{tag}"
        self.names = [f"mluh{tag}_{i}" for i in range(count)]
        self.addresses = [f"{SUBNET}.{i + 1}" for i in range(count)]
        self.shaping = "none"  # what _shape applied to each host's link

    @staticmethod
    def unavailable():
        """Why namespaces cannot be made here, or None."""
        if shutil.which("ip") is None or shutil.which("tc") is None:
            return "iproute2 (ip, tc) is not installed"
        probe = f"mluprobe{os.getpid() % 100000}"
        r = _ip("netns", "add", probe, check=False)
        if r.returncode != 0:
            return f"cannot create network namespaces ({r.stderr.strip() or 'ip netns add failed'}): needs root"
        _ip("netns", "del", probe, check=False)
        return None

    def __enter__(self):
        try:
            self._create()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()

    def _create(self):
        _ip("netns", "add", self.switch)
        _ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.switch, "link", "set", "br0", "up")
        for i, (name, address) in enumerate(zip(self.names, self.addresses)):
            _ip("netns", "add", name)
            _ip("-n", name, "link", "set", "lo", "up")
            port = f"p{i}"
            _ip("-n", name, "link", "add", INTERFACE, "type", "veth", "peer", "name", port, "netns", self.switch)
            _ip("-n", self.switch, "link", "set", port, "master", "br0")
            _ip("-n", self.switch, "link", "set", port, "up")
            _ip("-n", name, "addr", "add", f"{address}/24", "dev", INTERFACE)
            _ip("-n", name, "link", "set", INTERFACE, "up")
            self._shape(name)

    def _shape(self, name):
        # netem for delay and rate; kernels without it (no sch_netem) get the rate alone from tbf, and `shaping`
        # says what was applied.
        def tc(*args):
            return subprocess.run(["ip", "netns", "exec", name, "tc", "qdisc", "add", "dev", INTERFACE, "root",
                                   *args], capture_output=True, text=True, timeout=30)
        netem = (["delay", f"{self.delay_us}us"] if self.delay_us else []) + (["rate", self.rate] if self.rate else [])
        if not netem:
            self.shaping = "none"
            return
        r = tc("netem", *netem)
        if r.returncode == 0:
            self.shaping = "netem " + " ".join(netem)
            return
        if not self.rate:
            raise RuntimeError(f"tc netem is not available here ({r.stderr.strip()}): cannot add a delay")
        r2 = tc("tbf", "rate", self.rate, "burst", "256kb", "latency", "10ms")
        if r2.returncode != 0:
            raise RuntimeError(f"neither tc netem ({r.stderr.strip()}) nor tbf ({r2.stderr.strip()}) is available")
        self.shaping = f"tbf rate {self.rate} (tc netem unavailable: {r.stderr.strip()}; no delay)"

    def close(self):
        for name in [*self.names, self.switch]:
            _ip("netns", "del", name, check=False)

    def env(self, host):
        """What a process on `host` needs: the link Gloo (and so cncl) binds to, and the host's address."""
        return {"GLOO_SOCKET_IFNAME": INTERFACE, "NETNS_HOST_ADDRESS": self.addresses[host]}

    def popen(self, host, argv, env=None, **kwargs):
        """Starts `argv` on `host` (in its namespace), with this process's environment plus `env`."""
        full_env = dict(os.environ, **self.env(host), **(env or {}))
        return subprocess.Popen(["ip", "netns", "exec", self.names[host], *argv], env=full_env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kwargs)

    def torchrun(self, host, script_argv, nproc=1, port=29400, env=None, **kwargs):
        """torchrun --nnodes <count> on `host`, rendezvous (c10d) at host 0."""
        import sys
        argv = [sys.executable, "-m", "torch.distributed.run", "--nnodes", str(self.count), "--node-rank", str(host),
                "--nproc-per-node", str(nproc), "--rdzv-backend", "c10d",
                "--rdzv-endpoint", f"{self.addresses[0]}:{port}", "--rdzv-id", self.switch,
                # torchrun hosts the rendezvous store where the endpoint names the machine, which it decides by host
                # name: all namespaces share the machine's, so host 0 is told.
                "--rdzv-conf", f"is_host={int(host == 0)}", "--local-addr",
                self.addresses[host], *script_argv]
        return self.popen(host, argv, env=env, **kwargs)

    def torchrun_all(self, script_argv, timeout, **kwargs):
        """torchrun on every host at once; waits (at most `timeout` seconds each) and returns [(returncode, output)]."""
        procs = [self.torchrun(h, script_argv, **kwargs) for h in range(self.count)]
        results = []
        for p in procs:
            try:
                results.append(p.communicate(timeout=timeout)[0])
            finally:
                p.kill()
        return [(p.returncode, out) for p, out in zip(procs, results)]

