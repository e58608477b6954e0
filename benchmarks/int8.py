"""int8 GEMM 1024^3 tensorized onto dp4a (vpdpbusd where the CPU has AVX-512 VNNI) and, with
7-bit activations (0..127), onto dp4a_u7 (vpmaddubsw on AVX2), vs numpy's fp32 GEMM, and bf16
(vdpbf16ps) where present; timed interleaved in one run.

    python benchmarks/int8.py [--n 1024] [--rounds 7] [--json]

The target (issue 14): int8 >= 2.5x numpy fp32 on a VNNI CPU. What the instructions allow,
counted in multiply-adds per instruction (the throughput of each is about the same):

* AVX-512 VNNI ``vpdpbusd zmm``: 64 u8 x s8 MACs, vs ``vfmadd zmm`` 16 fp32 MACs: 4x;
* AVX2 without VNNI, the classic ``vpmaddubsw + vpmaddwd + vpaddd`` (32 MACs in 3
  instructions) vs ``vfmadd ymm`` (8): 1.33x, but ``vpmaddubsw`` saturates its int16 pairs
  (255 * -128 * 2), so it is exact only for 7-bit activations (127 * 128 * 2 < 32767):
  the "mlc int8 u7" row (``dp4a_u7``), the path the quantized MLP takes;
* mlc's exact portable fallback (bytes widened to int16, ``vpmaddwd``, lanes added in pairs):
  about 16 instructions per 64 MACs vs 8 FMAs: 0.5x.

Each round sleeps 0.2 s before each contender (OpenBLAS's spinning threads must not steal
the next one's cores), then takes the median of ``number`` calls; the table shows medians
over rounds and the median of the per-round ratios numpy / mlc (above 1: int8 is faster).
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from collections.abc import Callable

import numpy as np

import mlc
from mlc import te
from mlc.target.llvm.dot import bf16_lanes, cpu_features, pmadd_lanes, vnni_lanes
from mlc.topi.x86 import dense_int8, pack_weight, schedule_dense_int8
from mlc.topi.x86.dense_bf16 import dense_bf16, from_bf16, pack_weight_bf16, to_bf16


def _median_call(fn: Callable[[], object], number: int) -> float:
    times = []
    for _ in range(number):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--number", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    n = args.n
    feats = cpu_features()
    vnni, bf16 = vnni_lanes(feats), bf16_lanes(feats)
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (n, n)).astype(np.uint8)
    a[0, :] = 255
    a7 = a >> 1  # 0..127
    w = rng.integers(-128, 128, (n, n)).astype(np.int8)
    w[:, 0] = -128
    packed, _ = pack_weight(w)
    A = te.placeholder((n, n), "uint8", "A")
    W = te.placeholder(packed.shape, "int8", "W")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f8, f7 = (mlc.build(schedule_dense_int8(
            [A, W, dense_int8(A, W, None, units=n, data_bits=bits)],
            rows=3 if vnni == 0 and bits == 8 else 4).mod) for bits in (8, 7))
    c8, c7 = np.empty((n, n), np.int32), np.empty((n, n), np.int32)
    f8(a, packed, c8)
    f7(a7, packed, c7)
    wt = w.astype(np.int64).T
    exact = bool(np.array_equal(c8, a.astype(np.int64) @ wt))
    exact7 = bool(np.array_equal(c7, a7.astype(np.int64) @ wt))
    x32, y32 = rng.random((n, n), np.float32), rng.random((n, n), np.float32)
    contenders: dict[str, Callable[[], object]] = {
        "numpy fp32": lambda: x32 @ y32, "mlc int8": lambda: f8(a, packed, c8),
        "mlc int8 u7": lambda: f7(a7, packed, c7)}
    if bf16:
        sch, _ = dense_bf16(n, n, n)
        fb = mlc.build(sch.mod)
        ab, wb = to_bf16(x32), to_bf16(y32.T.copy())
        wbp, cb = pack_weight_bf16(wb), np.empty((n, n // 16, 16), np.float32)
        fb(ab, wbp, cb)
        err = float(np.abs(cb.reshape(n, n) - from_bf16(ab) @ from_bf16(wb).T).max())
        contenders["mlc bf16"] = lambda: fb(ab, wbp, cb)
    times: dict[str, list[float]] = {k: [] for k in contenders}
    for _ in range(args.rounds):
        for k, fn in contenders.items():
            time.sleep(0.2)
            times[k].append(_median_call(fn, args.number))
    med = {k: float(np.median(v)) for k, v in times.items()}
    ops = 2.0 * n ** 3
    base = np.array(times["numpy fp32"])
    rows = {k: {"seconds": t, "gops": ops / t / 1e9,  # the ratio: median of per-round ratios
                "numpy_over_this": float(np.median(base / np.array(times[k])))}
            for k, t in med.items()}
    path = (f"vpdpbusd ({32 * vnni}-bit)" if vnni else
            "portable (vpmaddwd on AVX2; no AVX-512 VNNI / AVX-VNNI)")
    pm = pmadd_lanes(feats)
    path7 = (path if vnni else f"vpmaddubsw + vpmaddwd ({32 * pm}-bit)" if pm else
             "portable (no SSSE3)")
    result = {"n": n, "cpu": sorted(f for f in feats if f.startswith("avx")), "int8_path": path,
              "int8_u7_path": path7, "int8_exact": exact, "int8_u7_exact": exact7,
              "theoretical_int8_over_fp32": 4.0 if vnni else 0.5,
              "theoretical_int8_u7_over_fp32": 4.0 if vnni else 1.33 if pm else 0.5,
              "rows": rows}
    if bf16:
        result["bf16_max_abs_err"] = err
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print(f"GEMM {n}^3, {args.rounds} rounds interleaved (medians)")
    print(f"int8 path: {path}; exact vs numpy: {exact}")
    print(f"int8 u7 path (activations 0..127): {path7}; exact vs numpy: {exact7}")
    print(f"{'':12} {'ms':>8} {'GOPS':>8} {'vs numpy fp32':>14}")
    for k, r in rows.items():
        print(f"{k:12} {r['seconds'] * 1e3:8.2f} {r['gops']:8.1f} {r['numpy_over_this']:13.2f}x")
    print("theoretical int8 / fp32 by instruction count on this CPU: "
          f"int8 {result['theoretical_int8_over_fp32']}x, int8 u7 "
          f"{result['theoretical_int8_u7_over_fp32']}x (VNNI 4x; AVX2: exact 8-bit fallback "
          "0.5x, vpmaddubsw with 7-bit activations 1.33x)")
    if not bf16:
        print("bf16: no AVX512_BF16 on this CPU (the portable fallback is tested, not timed)")


if __name__ == "__main__":
    main()
