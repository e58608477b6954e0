"""The thread runtime for small kernels: how long idle threads should spin before sleeping.

    python benchmarks/threads.py [--rounds 7] [--spins 0,20,50,100,200,inf] [--pin 0]
                                 [--json out.json]

libgomp reads its wait policy once, when it is loaded, so every policy runs in a worker
process of its own (``MLC_THREAD_SPIN_US``: 0 is ``OMP_WAIT_POLICY=passive``, ``inf`` is
``active``; ``default, torch first`` imports torch, and so torch's libgomp, before mlc:
its row should read as the default's; ``--pin 0`` adds spin 0 with ``MLC_PIN_THREADS=1``).
The workers are started together and kept stopped (SIGSTOP) except the one being timed,
so an ``active`` worker's spinning threads never run during another's round; rounds
alternate between the workers. Each round of a worker measures:

* ``region_us``: one call of a kernel that is one empty parallel loop (a store per thread),
  minus the same kernel without ``parallel``: the fork/join cost of a parallel region;
* ``mlp_us``: the batch-64 MLP 784-256-128-10 (``mlc.examples.mlp.mlp_graph``, random
  weights; one native call, three parallel layers and a softmax), bound and called back to
  back, as a server or a training loop does;
* ``next_us``: numpy's 256^3 matmul (OpenBLAS, its own threads) timed right after each MLP
  call: what a notebook's next line pays for mlc's idle threads, beside ``alone_us``, the
  same matmul after a matmul;
* ``mlp_cpu_us``: the CPU time of the whole process (every thread) per MLP call: what the
  spinning costs the machine, whoever else needed the CPU;
* ``guard_ns``: what the interrupt guard adds to a bound call (mlc.runtime.interrupt).

ONNX Runtime (when installed, a process of its own, 2 intra-op threads) runs the same MLP as
``Gemm`` nodes, and an ``Add`` of two 4-element vectors (its per-run overhead, the nearest
thing it has to a parallel region's fork/join). Medians over rounds, the spread as
(max - min) / median, and ratios to the passive policy are printed with the load average
before and after (the machine may be shared: rerun when it was busy).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np

WORKER = r"""
import json, os, resource, sys, time
import numpy as np
if os.environ.get("BENCH_TORCH_FIRST"):
    import torch  # its libgomp is loaded and initialised before mlc's
    torch.set_num_threads(1)
import mlc
from mlc import graph, te
from mlc.examples.mlp import mlp_graph, numpy_forward
from mlc.runtime import parallel

T = mlc.config.num_threads()
A = te.placeholder((T,), name="A")
def region(par):
    B = te.compute((T,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    if par:
        s[B].parallel(B.op.axis[0])
    return mlc.build(s, [A, B], name="region" if par else "serial")
a = np.zeros(T, "float32"); b = np.zeros(T, "float32")
par_run, ser_run = region(True).bind(a, b), region(False).bind(a, b)
G = te.placeholder((8, 2), name="G")
H = te.compute((8, 2), lambda i, j: G[i, j] + 1.0, name="H")  # an outer loop: guarded
guarded = mlc.build(te.create_schedule(H.op), [G, H], name="guarded")
g, h = np.zeros((8, 2), "float32"), np.zeros((8, 2), "float32")
guarded_run, raw = guarded.bind(g, h), guarded._cfunc.__wrapped__
ptrs = (g.ctypes.data, h.ctypes.data)

rng = np.random.default_rng(0)
sizes = (784, 256, 128, 10)
params = [((rng.standard_normal((o, i)) / np.sqrt(i)).astype("float32"),
           (rng.standard_normal(o) * 0.1).astype("float32")) for i, o in zip(sizes, sizes[1:])]
x = rng.random((64, 784)).astype("float32")
mod = graph.build(graph.optimize(mlp_graph(params, 64)), target="llvm")
mod.set_input(x=x); mod.run()
assert np.abs(mod.get_output(0) - numpy_forward(params, x)).max() < 1e-4
mlp = mod.run
P = rng.random((256, 256)).astype("float32"); R = np.empty_like(P)

def per_call(fn, n):
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n

def cpu():  # every thread of the process: spinning ones count
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

def one_round():
    mlp()
    out = {}
    out["region_us"] = (per_call(par_run, 2000) - per_call(ser_run, 2000)) * 1e6
    out["guard_ns"] = (per_call(guarded_run, 4000) - per_call(lambda: raw(*ptrs), 4000)) * 1e9
    cpu0 = cpu()
    out["mlp_us"] = per_call(mlp, 300) * 1e6
    out["mlp_cpu_us"] = (cpu() - cpu0) / 300 * 1e6
    spent = 0.0
    for _ in range(100):
        mlp()
        t0 = time.perf_counter(); np.matmul(P, P, out=R); spent += time.perf_counter() - t0
    out["next_us"] = spent / 100 * 1e6
    np.matmul(P, P, out=R)
    out["alone_us"] = per_call(lambda: np.matmul(P, P, out=R), 100) * 1e6
    return out

info = parallel.describe()
print(json.dumps({"ready": True, "describe": info}), flush=True)
for line in sys.stdin:
    print(json.dumps(one_round()), flush=True)
"""

ORT_WORKER = r"""
import json, resource, sys, time
import numpy as np
import onnx, onnxruntime as ort
from onnx import helper, TensorProto, numpy_helper
rng = np.random.default_rng(0)
sizes = (784, 256, 128, 10)
nodes, inits, prev = [], [], "x"
for k, (i, o) in enumerate(zip(sizes, sizes[1:])):
    w = (rng.standard_normal((o, i)) / np.sqrt(i)).astype("float32")
    b = (rng.standard_normal(o) * 0.1).astype("float32")
    inits += [numpy_helper.from_array(w, f"w{k}"), numpy_helper.from_array(b, f"b{k}")]
    nodes.append(helper.make_node("Gemm", [prev, f"w{k}", f"b{k}"], [f"g{k}"], transB=1))
    prev = f"g{k}"
    if k < 2:
        nodes.append(helper.make_node("Relu", [prev], [f"r{k}"])); prev = f"r{k}"
nodes.append(helper.make_node("Softmax", [prev], ["y"], axis=1))
g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                      [64, 784])], [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                      [64, 10])], inits)
add = helper.make_graph([helper.make_node("Add", ["p", "q"], ["r"])], "add",
    [helper.make_tensor_value_info(n, TensorProto.FLOAT, [4]) for n in "pq"],
    [helper.make_tensor_value_info("r", TensorProto.FLOAT, [4])])
def session(graph):
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    o = ort.SessionOptions(); o.intra_op_num_threads = 2; o.inter_op_num_threads = 1
    return ort.InferenceSession(m.SerializeToString(), o, providers=["CPUExecutionProvider"])
mlp, tiny = session(g), session(add)
x = rng.random((64, 784)).astype("float32"); p = np.ones(4, "float32")
run_mlp = lambda: mlp.run(None, {"x": x}); run_add = lambda: tiny.run(None, {"p": p, "q": p})
P = rng.random((256, 256)).astype("float32"); R = np.empty_like(P)
def per_call(fn, n):
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n
print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    run_mlp()
    out = {"region_us": per_call(run_add, 2000) * 1e6}
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    out["mlp_us"] = per_call(run_mlp, 300) * 1e6
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    out["mlp_cpu_us"] = (r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) / 300 * 1e6
    spent = 0.0
    for _ in range(100):
        run_mlp()
        t0 = time.perf_counter(); np.matmul(P, P, out=R); spent += time.perf_counter() - t0
    out["next_us"] = spent / 100 * 1e6
    out["alone_us"] = per_call(lambda: np.matmul(P, P, out=R), 100) * 1e6
    print(json.dumps(out), flush=True)
"""

def _environment(extra: dict[str, str]) -> dict[str, str]:
    """This process's environment with ``extra``; OpenMP settings left out (each worker's
    policy is its ``MLC_THREAD_SPIN_US``), threads as many as CPUs for everyone."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "MLC_THREAD_SPIN_US")}
    return {**env, **extra}


METRICS = ("region_us", "mlp_us", "mlp_cpu_us", "next_us", "alone_us", "guard_ns")


class Worker:
    def __init__(self, name: str, code: str, env: dict[str, str]) -> None:
        self.name = name
        self.proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True,
                                     env=_environment(env))
        self.info: dict[str, object] = {}
        self.rounds: list[dict[str, float]] = []

    def wait_ready(self) -> None:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"worker {self.name} failed to start")
        self.info = json.loads(line)
        os.kill(self.proc.pid, signal.SIGSTOP)

    def round(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        os.kill(self.proc.pid, signal.SIGCONT)
        time.sleep(0.05)
        self.proc.stdin.write("round\n")
        self.proc.stdin.flush()
        self.rounds.append(json.loads(self.proc.stdout.readline()))
        os.kill(self.proc.pid, signal.SIGSTOP)

    def close(self) -> None:
        os.kill(self.proc.pid, signal.SIGCONT)
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


def summary(rounds: list[dict[str, float]], key: str) -> tuple[float, float]:
    values = [r[key] for r in rounds if key in r]
    if not values:
        return float("nan"), float("nan")
    med = float(np.median(values))
    return med, (max(values) - min(values)) / abs(med) if med else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--spins", default="0,20,50,100,200,inf")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--pin", default="", help="spins to run again with MLC_PIN_THREADS=1")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()}; CPUs: {len(os.sched_getaffinity(0))}")
    workers = [Worker(f"spin {s} us", WORKER, {"MLC_THREAD_SPIN_US": s})
               for s in args.spins.split(",")]
    workers += [Worker(f"spin {s} us, pinned", WORKER,
                       {"MLC_THREAD_SPIN_US": s, "MLC_PIN_THREADS": "1"})
                for s in args.pin.split(",") if s]
    try:
        import torch  # noqa: F401

        if not args.no_torch:
            workers.append(Worker("default, torch first", WORKER,
                                  {"BENCH_TORCH_FIRST": "1"}))
    except ImportError:
        pass
    try:
        import onnxruntime  # noqa: F401

        workers.append(Worker("ONNX Runtime", ORT_WORKER, {}))
    except ImportError:
        pass
    for w in workers:
        w.wait_ready()
    try:
        for _ in range(args.rounds):
            for w in workers:
                w.round()
    finally:
        for w in workers:
            w.close()
    first = workers[0].info.get("describe", {})
    print(f"libgomp: {first.get('libgomp')} (private copy: {first.get('private_copy')}), "
          f"{first.get('ns_per_spin', 0):.1f} ns per spin")
    for w in workers:
        before = w.info.get("describe", {}).get("loaded_before")  # type: ignore[union-attr]
        if before:
            print(f"  {w.name}: OpenMP runtimes loaded before mlc's: {before}")
    base = {k: summary(workers[0].rounds, k)[0] for k in METRICS}
    head = (f"{'policy':<20}{'region us':>14}{'MLP b64 us':>16}{'MLP CPU us':>14}"
            f"{'numpy next us':>16}{'numpy alone':>14}{'guard ns':>12}")
    print(head)
    for w in workers:
        cells = []
        for k, width in zip(METRICS, (14, 16, 14, 16, 14, 12)):
            med, spread = summary(w.rounds, k)
            cell = "-" if med != med else f"{med:.1f} ±{spread * 100:.0f}%"
            cells.append(f"{cell:>{width}}")
        print(f"{w.name:<20}" + "".join(cells))
    print(f"ratios to {workers[0].name} (below 1: faster)")
    for w in workers[1:]:
        r = {k: summary(w.rounds, k)[0] / base[k]
             for k in ("region_us", "mlp_us", "mlp_cpu_us", "next_us")}
        print(f"  {w.name:<20} region {r['region_us']:.2f}  MLP {r['mlp_us']:.2f}  "
              f"MLP CPU {r['mlp_cpu_us']:.2f}  numpy next {r['next_us']:.2f}")
    print(f"load average after: {os.getloadavg()}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({w.name: {"rounds": w.rounds, "info": w.info} for w in workers}, fh,
                      indent=1)


if __name__ == "__main__":
    main()
