"""MLP inference, mlc vs ONNX Runtime (issue 30), and the digits MLP vs numpy (``--digits``).

    python benchmarks/mlp.py [--rounds 9] [--threads 2]      # the table of issue 30
    python benchmarks/mlp.py --digits [--rounds 7] [--json]   # digits MLP, fp32 and int8

Default: the MLP 784-256-128-10 as ONNX ``Gemm`` (torch's export of Linear) and as
``MatMul`` + ``Add`` (as many exporters write it), at batch 1 and 64, imported with
``graph.from_onnx`` and compiled, against ONNX Runtime on the same model, both with
``--threads`` threads, interleaved (see benchmarks/vs_ort.py: pause + one untimed call before
each timed batch, no torch in the process, load average beside every row).

``--digits``: models trained in numpy (64-64-32-10) and a 784-128-10 MLP, mlc vs numpy (vs
torch when installed: that mode imports it), and the int8 build. mlc is timed as
``mod(x=x)``: the input copied in, ONE native call for the whole graph, the output returned.
Threads there: ``MLC_NUM_THREADS`` (default: every core), numpy's BLAS and torch use
``OMP_NUM_THREADS``/``OPENBLAS_NUM_THREADS``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import vs_ort  # noqa: E402

# before mlc loads its OpenMP runtime
THREADS = vs_ort.setup_from_argv(sys.argv) if "--digits" not in sys.argv else 0

from mlc import graph  # noqa: E402
from mlc.examples.mlp import load_data, mlp_graph, numpy_forward, train_mlp  # noqa: E402


def per_call(fn: Callable[[], object], number: int) -> float:
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t0) / number


def torch_forward(params: list[tuple[np.ndarray, np.ndarray]]) -> Callable[[np.ndarray],
                                                                              object] | None:
    try:
        import torch
    except ImportError:
        return None
    layers = [(torch.from_numpy(w), torch.from_numpy(b)) for w, b in params]

    def run(x: np.ndarray) -> object:
        with torch.no_grad():
            h = torch.from_numpy(x)
            for k, (w, b) in enumerate(layers):
                h = torch.nn.functional.linear(h, w, b)
                if k < len(layers) - 1:
                    h = torch.relu(h)
            return torch.softmax(h, dim=1)

    return run


def bench(name: str, params: list[tuple[np.ndarray, np.ndarray]], batch: int,
          rounds: int) -> dict[str, object]:
    x = np.random.default_rng(1).random((batch, params[0][0].shape[1])).astype("float32")
    mod = graph.build(graph.optimize(mlp_graph(params, batch)), target="llvm")
    mod.set_input(x=x)
    mod.run()
    err = float(np.abs(mod.get_output(0) - numpy_forward(params, x)).max())
    contenders: dict[str, Callable[[], object]] = {
        "mlc": lambda: mod(x=x), "numpy": lambda: numpy_forward(params, x)}
    tf = torch_forward(params)
    if tf is not None:
        contenders["torch"] = lambda: tf(x)
    number = 200 if batch == 1 else 50
    times: dict[str, list[float]] = {k: [] for k in contenders}
    for fn in contenders.values():
        fn()
    for _ in range(rounds):
        for k, fn in contenders.items():
            times[k].append(per_call(fn, number))
    med = {k: float(np.median(v)) for k, v in times.items()}
    row: dict[str, object] = {"model": name, "batch": batch, "kernels": len(mod.kernels),
                              "native_calls": mod.num_native_calls,
                              "max_abs_err": err}
    row.update({f"{k}_us": v * 1e6 for k, v in med.items()})
    row["numpy/mlc"] = med["numpy"] / med["mlc"]
    if "torch" in med:
        row["torch/mlc"] = med["torch"] / med["mlc"]
    return row


def bench_int8(params: list[tuple[np.ndarray, np.ndarray]], rounds: int) -> list[dict[str, object]]:
    """The digits MLP quantized (int8 weights per channel; graph.qnn) vs the fp32 build, on the
    held-out digits: accuracy and time, interleaved, 0.2 s pause before each timed batch.
    Two int8 builds: ``int8`` (the default: non-negative activations in 7 bits, dp4a_u7, which
    is vpmaddubsw on AVX2) and ``int8_8bit`` (every activation with zero point 128, dp4a: the
    exact portable fallback without VNNI). Ratios are medians of per-round ratios."""
    import warnings

    from mlc.examples.qmlp import quantize_mlp, quantized_mlp_graph

    xtr, _, xte, yte = load_data()
    q = quantize_mlp(params, xtr)
    out = []
    for batch in (64, len(xte)):
        x = xte[:batch]
        mods = {"fp32": graph.build(graph.optimize(mlp_graph(params, batch)), target="llvm")}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for k, seven in (("int8", True), ("int8_8bit", False)):
                g = quantized_mlp_graph(q, batch, seven_bits=seven)
                mods[k] = graph.build(graph.optimize(g), target="llvm")
        acc = {k: float((m(x=x)[0].argmax(1) == yte[:batch]).mean()) for k, m in mods.items()}
        times: dict[str, list[float]] = {k: [] for k in mods}
        for _ in range(rounds):
            for k, m in mods.items():
                time.sleep(0.2)
                times[k].append(per_call(lambda m=m, x=x: m(x=x), 50))
        med = {k: float(np.median(v)) for k, v in times.items()}
        fp32 = np.array(times["fp32"])
        row: dict[str, object] = {"model": "digits int8", "batch": batch, "rounds": rounds}
        for k in mods:
            row[f"acc_{k}"] = acc[k]
            row[f"{k}_us"] = med[k] * 1e6
            if k != "fp32":
                row[f"fp32/{k}"] = float(np.median(fp32 / np.array(times[k])))
        out.append(row)
    return out


def versus_ort(rounds: int, threads: int) -> None:
    """The table of issue 30: both spellings, batch 1 and 64, against ONNX Runtime."""
    from mlc.graph.frontend import onnx_examples

    print(vs_ort.header(threads, rounds))
    for batch in (1, 64):
        for spelling, label in (("gemm", "Gemm"), ("matmul", "MatMul + Add")):
            model = onnx_examples.mlp(spelling, batch)
            r = vs_ort.compare(f"MLP 784-256-128-10, {label}, batch {batch}", model, threads,
                               rounds, 400 if batch == 1 else 50)
            print(vs_ort.row(r), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                    help="cpu: one thread each, timed by this thread's CPU time")
    ap.add_argument("--digits", action="store_true", help="the digits MLP vs numpy and int8")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if not args.digits:
        versus_ort(args.rounds or 9, THREADS)
        return
    args.rounds = args.rounds or 7
    xtr, ytr, _, _ = load_data()
    digits = train_mlp(xtr, ytr, epochs=10)
    rng = np.random.default_rng(0)
    big = [((rng.standard_normal((o, i)) * 0.05).astype("float32"), np.zeros(o, "float32"))
           for i, o in ((784, 128), (128, 10))]
    rows = [bench(name, p, b, args.rounds)
            for name, p in (("digits 64-64-32-10", digits), ("784-128-10", big))
            for b in (1, 64)]
    qrows = bench_int8(digits, args.rounds)
    if args.json:
        print(json.dumps(rows + qrows, indent=1))
        return
    import os

    env = ", ".join(f"{k}={os.environ.get(k, '-')}" for k in
                    ("MLC_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"))
    print(f"threads: {env}; {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.1f}")
    for r in rows:
        extra = f"  torch {r['torch_us']:8.1f} us ({r['torch/mlc']:.2f}x)" if "torch_us" in r \
            else ""
        print(f"{r['model']:>20} batch {r['batch']:3d}: mlc {r['mlc_us']:8.1f} us  "
              f"numpy {r['numpy_us']:8.1f} us  numpy/mlc {r['numpy/mlc']:5.2f}x{extra}  "
              f"[{r['kernels']} kernels in {r['native_calls']} call, err {r['max_abs_err']:.1e}]")
    for q in qrows:
        print(f"{q['model']:>20} batch {q['batch']:3d}: fp32 {q['fp32_us']:8.1f} us  int8 "
              f"(7-bit activations) {q['int8_us']:8.1f} us  fp32/int8 {q['fp32/int8']:5.2f}x  "
              f"int8 8-bit {q['int8_8bit_us']:8.1f} us ({q['fp32/int8_8bit']:.2f}x)  accuracy "
              f"fp32 {q['acc_fp32']:.3f} int8 {q['acc_int8']:.3f} ({q['rounds']} rounds)")


if __name__ == "__main__":
    main()
