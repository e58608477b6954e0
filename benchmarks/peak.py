"""The machine's fp32 peak: mlc's own FMA kernel against a C microbenchmark, side by side.

mlc's kernel (``mlc.viz.perf.peak_func``, the one notebook 04's roofline uses) is a GEMM
micro-kernel on data in L1: a register tile of independent accumulators sized from the
vector registers LLVM reports for this CPU (AVX2: 6 x 2 ymm, AVX-512: 14 x 2 zmm), updated
by broadcast x vector FMAs, its tasks spread over every thread. The reference is C compiled
here with ``cc -O2 -march=native -fopenmp``: every OpenMP thread runs ``2 x rows``
independent FMA chains on registers (no loads at all), the same vector width. Both are
timed in alternating rounds (a pause before each, so neither inherits the other's busy
threads); each round keeps the best call of each, and the table shows every round's ratio
and their median. The memory bandwidth (all threads copying 64 MiB) is printed too.

    python benchmarks/peak.py [--rounds 5] [--seconds 0.3]

Without a C compiler only mlc's figure is printed.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import mlc
from mlc import config
from mlc.target.llvm.cpu import host_simd
from mlc.viz.perf import PEAK_SHAPE, measure_bandwidth, measure_peak, peak_func, peak_shape

__all__ = ["PEAK_SHAPE", "measure_peak", "peak_func", "c_peak"]

C_SOURCE = r"""
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
typedef float vec __attribute__((vector_size(LANES * 4)));
int main(int argc, char **argv) {
    long iters = atol(argv[1]);
    int reps = atoi(argv[2]);
    double best = 0;
    float sink = 0;
    #pragma omp parallel
    { }  /* start the threads before timing */
    for (int r = 0; r < reps; r++) {
        double t0 = omp_get_wtime();
        #pragma omp parallel reduction(+ : sink)
        {
            vec acc[CHAINS], x, y;
            for (int l = 0; l < LANES; l++) { x[l] = 1.0001f; y[l] = 1e-7f; }
            for (int a = 0; a < CHAINS; a++) acc[a] = x * (float)a;
            for (long i = 0; i < iters; i++) {
                #pragma GCC unroll 64
                for (int a = 0; a < CHAINS; a++) acc[a] = acc[a] * x + y;  /* one FMA each */
            }
            for (int a = 1; a < CHAINS; a++) acc[0] += acc[a];
            sink += acc[0][0];
        }
        double g = 2.0 * LANES * CHAINS * (double)iters * omp_get_max_threads()
                   / (omp_get_wtime() - t0) / 1e9;
        if (g > best) best = g;
    }
    printf("%.3f %g\n", best, (double)sink);
    return 0;
}
"""


def build_c_peak(chains: int, lanes: int) -> Path | None:
    """Compile the C FMA microbenchmark; None when there is no C compiler."""
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        return None
    tmp = Path(tempfile.mkdtemp(prefix="mlc-peak-"))
    (tmp / "peak.c").write_text(C_SOURCE)
    exe = tmp / "peak"
    cmd = [cc, "-O2", "-march=native", "-ffp-contract=fast", "-fopenmp", f"-DLANES={lanes}",
           f"-DCHAINS={chains}", str(tmp / "peak.c"), "-o", str(exe)]
    if subprocess.run(cmd, capture_output=True).returncode != 0:
        return None
    return exe


def c_peak(exe: Path, seconds: float = 0.3) -> float:
    """Best GFLOPS of the C microbenchmark's calls (each about 10 ms, on every OpenMP thread)
    over about ``seconds``; each call is timed inside the program, threads already started."""
    env = {"OMP_NUM_THREADS": str(config.num_threads())}
    iters, reps = 200_000, max(1, int(seconds / 0.01))
    out = subprocess.run([str(exe), str(iters), str(reps)], capture_output=True, text=True,
                         env=env, check=True)
    return float(out.stdout.split()[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=0.3)
    args = parser.parse_args()
    simd = host_simd()
    shape = peak_shape()
    f = mlc.build(peak_func(**shape))
    chains = 2 * shape["rows"]
    exe = build_c_peak(chains, simd.lanes)
    print(f"{simd.isa}: {simd.lanes} fp32 lanes, {simd.registers} vector registers; "
          f"{config.num_threads()} threads; mlc tile {shape['rows']} x {shape['lanes']}, "
          f"C: {chains} FMA chains per thread")
    rows = []
    for _ in range(args.rounds):
        time.sleep(0.2)
        m = measure_peak(args.seconds, module=f)
        c = None
        if exe is not None:
            time.sleep(0.2)
            c = c_peak(exe, args.seconds)
        rows.append((m, c))
        versus = f"   C {c:7.1f} GFLOPS   mlc/C {m / c:5.2f}" if c else ""
        print(f"  mlc {m:7.1f} GFLOPS{versus}")
    med = statistics.median(m for m, _ in rows)
    if exe is not None:
        ratio = statistics.median(m / c for m, c in rows if c)
        print(f"peak: mlc {med:.0f} GFLOPS fp32, C {statistics.median(c for _, c in rows if c):.0f}"
              f"; mlc/C median {ratio:.2f} over {args.rounds} rounds")
    else:
        print(f"peak: mlc {med:.0f} GFLOPS fp32 (no C compiler for the reference)")
    print(f"memory bandwidth (all threads, 64 MiB copy): {measure_bandwidth():.1f} GB/s")


if __name__ == "__main__":
    main()
