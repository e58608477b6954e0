"""Apache TVM's side of the benchmarks: the same kernels, written with TVM's own API.

Everything TVM-specific lives here, so the other benchmarks stay readable and still run
when TVM is not installed (``available()`` is then False and they print no TVM column).
TVM is an optional extra, not a dependency of mlc::

    pip install -e ".[bench]"        # apache-tvm>=0.27

What TVM 0.27 looks like next to mlc (the names are the same on purpose):

=================================  ==========================================
mlc                                TVM 0.27
=================================  ==========================================
``tir.Schedule(func)``             ``tvm.s_tir.Schedule(func)``
``sch.get_block("C")``             ``sch.get_sblock("C")``
``mlc.build(mod, target="llvm")``  ``tvm.compile(mod, target=Target({...}))``
numpy arrays, written in place     ``tvm.runtime.tensor(array, tvm.cpu())``
``MLC_NUM_THREADS``                ``TVM_NUM_THREADS`` (set here to the core count)
=================================  ==========================================

TVM 0.27 has no te schedules (``te.create_schedule`` is gone): a te computation becomes a
PrimFunc with ``te.create_prim_func`` and is scheduled with ``s_tir``, exactly the TensorIR
half of mlc. Targets are dicts naming the host CPU (from llvmlite, so both compilers tune
for the same micro-architecture) and the core count.

Public functions:

* ``available()`` -- is TVM importable? ``version()`` -- which one (or None);
* ``STEPS`` -- the GEMM journey of ``benchmarks/gemm.py``, each step ``n -> IRModule``;
* ``build_gemm(step, n)`` -- a ``TVMGemm``: compiled kernel, compile time, a numpy-in call;
* ``tvm_compile_time(step, n)`` -- seconds to schedule and compile one step;
* ``tvm_mlp(params, batch)`` -- an MLP forward pass compiled by TVM, numpy in and out,
  with the call shape of ``benchmarks/mlp.py``'s ``torch_forward``;
* ``metaschedule_gemm(n, trials)`` -- GEMM tuned by MetaSchedule (``benchmarks/tune_gemm.py``).

MetaSchedule 0.27 needs ``apache-tvm-ffi==0.1.14.post0``, ``cloudpickle`` and ``psutil``
beside ``apache-tvm`` (``pip install apache-tvm "apache-tvm-ffi==0.1.14.post0" cloudpickle
psutil``); its target must name the CPU (``mcpu``, as :func:`host_target` does).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# TVM's thread pool reads this once, at first use; without it it runs one thread here.
os.environ.setdefault("TVM_NUM_THREADS", str(os.cpu_count() or 1))

try:
    import tvm
    from tvm import s_tir, te
except (ImportError, OSError):  # optional (OSError: a broken shared library it loads)
    tvm = None

BN = 32  # block size of the output tile (same as gemm.py)
KF = 4  # reduction split (same as gemm.py)


def available() -> bool:
    """True when ``apache-tvm`` is importable (``pip install -e ".[bench]"``)."""
    return tvm is not None


def version() -> str | None:
    """TVM's version string, or None when it is not installed."""
    return None if tvm is None else str(tvm.__version__)


def _require() -> None:
    if tvm is None:
        raise RuntimeError(
            "apache-tvm is not installed; install the optional extra with "
            "`pip install -e \".[bench]\"` or run the benchmark with --no-tvm"
        )


def host_target() -> Any:
    """TVM's LLVM target for this machine: host CPU name from llvmlite, every core."""
    _require()
    import llvmlite.binding as llvm

    return tvm.target.Target(
        {"kind": "llvm", "mcpu": llvm.get_host_cpu_name(), "num-cores": os.cpu_count() or 1}
    )


# --- the GEMM journey, step by step (mirrors benchmarks/gemm.py) --------------------------


def _matmul(n: int) -> Any:
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return te.create_prim_func([A, B, C])


def _packed_matmul(n: int) -> Any:
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    packedB = te.compute((n // BN, n, BN), lambda x, y, z: B[y, x * BN + z], name="packedB")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute(
        (n, n), lambda i, j: te.sum(A[i, k] * packedB[j // BN, k, j % BN], axis=k), name="C"
    )
    return te.create_prim_func([A, B, C])


def naive(n: int) -> Any:
    return tvm.IRModule({"main": _matmul(n)})


def _blocked(n: int, order: str, vectorize: bool) -> Any:
    sch = s_tir.Schedule(_matmul(n))
    c = sch.get_sblock("C")
    i, j, k = sch.get_loops(c)
    io, ii = sch.split(i, factors=[None, BN])
    jo, ji = sch.split(j, factors=[None, BN])
    ko, ki = sch.split(k, factors=[None, KF])
    if order == "blocking":
        sch.reorder(io, jo, ko, ki, ii, ji)
    else:  # loop permutation: walk A's rows while the tile of C stays in cache
        sch.reorder(io, jo, ko, ii, ki, ji)
    if vectorize:
        sch.vectorize(ji)
    return sch.mod


def blocking(n: int) -> Any:
    return _blocked(n, "blocking", vectorize=False)


def vectorization(n: int) -> Any:
    return _blocked(n, "blocking", vectorize=True)


def loop_permutation(n: int) -> Any:
    return _blocked(n, "permutation", vectorize=True)


def _packed(n: int, write_cache: bool, parallel: bool) -> Any:
    sch = s_tir.Schedule(_packed_matmul(n))
    c = sch.get_sblock("C")
    i, j, k = sch.get_loops(c)
    io, ii = sch.split(i, factors=[None, BN])
    jo, ji = sch.split(j, factors=[None, BN])
    ko, ki = sch.split(k, factors=[None, KF])
    sch.reorder(io, jo, ko, ii, ki, ji)
    # TVM vectorizes or parallelizes a loop only over a block that still owns its init, so
    # both come before decompose_reduction here (mlc accepts either order).
    sch.vectorize(ji)
    if parallel:
        sch.parallel(io)
    if write_cache:
        cc = sch.cache_write(c, 0, "local")
        sch.reverse_compute_at(cc, jo)
        sch.unroll(ki)
        init = sch.decompose_reduction(c, ko)
        sch.vectorize(sch.get_loops(init)[-1])
        sch.vectorize(sch.get_loops(cc)[-1])
    p = sch.get_sblock("packedB")
    px, _, pz = sch.get_loops(p)
    if parallel:
        sch.parallel(px)
    sch.vectorize(pz)
    return sch.mod


def array_packing(n: int) -> Any:
    return _packed(n, write_cache=False, parallel=False)


def write_cache(n: int) -> Any:
    return _packed(n, write_cache=True, parallel=False)


def parallel(n: int) -> Any:
    return _packed(n, write_cache=True, parallel=True)


STEPS: dict[str, Callable[[int], Any]] = {
    "naive": naive,
    "blocking": blocking,
    "vectorization": vectorization,
    "loop_permutation": loop_permutation,
    "array_packing": array_packing,
    "write_cache": write_cache,
    "parallel+unroll": parallel,
}

_warmed = False


def _warm_up() -> None:
    """Compile one tiny kernel so the first step does not pay TVM's one-time start-up."""
    global _warmed
    if not _warmed:
        tvm.compile(naive(BN), target=host_target())
        _warmed = True


def tvm_compile_time(step: str, n: int) -> float:
    """Seconds to build the schedule of ``step`` and compile it with TVM (after a warm-up)."""
    return build_gemm(step, n).compile_s


@dataclass
class TVMGemm:
    """One step of the journey compiled by TVM, with its arguments already on the device.

    ``kernel()`` runs ``C = A @ B`` on the TVM tensors made by ``set_inputs`` (no copies, so
    it is timed like mlc's in-place call); ``result()`` brings C back as numpy.
    """

    step: str
    compile_s: float
    func: Any
    args: list[Any] = field(default_factory=list)
    compile_cpu_s: float = 0.0

    def set_inputs(self, a: np.ndarray, b: np.ndarray) -> None:
        dev = tvm.cpu()
        c = np.zeros((a.shape[0], b.shape[1]), dtype=a.dtype)
        self.args = [tvm.runtime.tensor(x, dev) for x in (a, b, c)]

    def kernel(self) -> None:
        self.func(*self.args)

    def result(self) -> np.ndarray:
        return self.args[2].numpy()


def build_gemm(step: str, n: int) -> TVMGemm:
    """Schedule ``step`` of the GEMM journey with TVM's TensorIR and compile it for the host.

    ``compile_s`` covers the schedule and ``tvm.compile`` (lowering, LLVM, JIT), the same
    span gemm.py measures for mlc.
    """
    _require()
    if step not in STEPS:
        raise ValueError(f"unknown GEMM step {step!r}; the steps are {', '.join(STEPS)}")
    _warm_up()
    t0, c0 = time.perf_counter(), time.process_time()
    ex = tvm.compile(STEPS[step](n), target=host_target())
    func = ex["main"]
    return TVMGemm(step, time.perf_counter() - t0, func,
                   compile_cpu_s=time.process_time() - c0)


def metaschedule_gemm(n: int, trials: int, work_dir: str | None = None,
                      seed: int = 0) -> tuple[TVMGemm, float]:
    """``C = A @ B`` (n x n fp32) tuned by MetaSchedule with ``trials`` measurements (its
    default space and xgb cost model), then compiled with the best schedule. Returns the
    compiled GEMM (``compile_s``: the final compile) and the tuning wall time in seconds."""
    _require()
    import tempfile

    from tvm.s_tir import meta_schedule as ms

    target = host_target()
    mod = naive(n)
    work = work_dir or tempfile.mkdtemp(prefix="tvm-ms-")
    t0 = time.perf_counter()
    database = ms.tune_tir(mod, target=target, work_dir=work, max_trials_global=trials,
                           num_trials_per_iter=min(64, trials), seed=seed)
    wall = time.perf_counter() - t0
    sch = ms.tir_integration.compile_tir(database, mod, target)
    if sch is None:
        raise RuntimeError("MetaSchedule found no valid schedule")
    t0 = time.perf_counter()
    ex = tvm.compile(sch.mod, target=target)
    return TVMGemm("metaschedule", time.perf_counter() - t0, ex["main"]), wall


# --- an MLP forward pass, for benchmarks/mlp.py -------------------------------------------


def _dense(h: Any, wt: Any, name: str) -> Any:
    """``h @ wt`` with ``wt`` the transposed weight, shape (in, out): rows of it are contiguous
    along the output features, which is the loop the schedule vectorizes."""
    (batch, in_f), out_f = h.shape, wt.shape[1]
    k = te.reduce_axis((0, in_f), name=f"k_{name}")
    return te.compute((batch, out_f), lambda i, j: te.sum(h[i, k] * wt[k, j], axis=k), name=name)


def _bias(d: Any, b: Any, relu: bool, name: str) -> Any:
    if relu:
        zero = tvm.tirx.const(0.0, "float32")
        return te.compute(d.shape, lambda i, j: te.max(d[i, j] + b[j], zero), name=name)
    return te.compute(d.shape, lambda i, j: d[i, j] + b[j], name=name)


def _softmax(h: Any) -> Any:
    batch, n_out = h.shape
    r = te.reduce_axis((0, n_out), name="r")
    mx = te.compute((batch,), lambda i: te.max(h[i, r], axis=r), name="mx")
    e = te.compute((batch, n_out), lambda i, j: te.exp(h[i, j] - mx[i]), name="e")
    r2 = te.reduce_axis((0, n_out), name="r2")
    s = te.compute((batch,), lambda i: te.sum(e[i, r2], axis=r2), name="s")
    return te.compute((batch, n_out), lambda i, j: e[i, j] / s[i], name="y")


def _mlp_func(shapes: list[tuple[int, int]], batch: int) -> Any:
    """``softmax(relu(x W0^T + b0) ... W_last^T + b_last)`` as one te program."""
    x = te.placeholder((batch, shapes[0][1]), name="x")
    h, params = x, []
    for li, (out_f, in_f) in enumerate(shapes):
        w = te.placeholder((in_f, out_f), name=f"wt{li}")
        b = te.placeholder((out_f,), name=f"b{li}")
        params += [w, b]
        last = li == len(shapes) - 1
        h = _bias(_dense(h, w, f"dense{li}"), b, relu=not last, name=f"bias{li}")
    return te.create_prim_func([x, *params, _softmax(h)])


def _schedule_mlp(func: Any, layers: int) -> Any:
    """A plain schedule for each dense: ``for i: for k: C[i, :] += h[i, k] * wt[k, :]`` with
    the output-feature loop vectorized, on one thread.

    Deliberately modest (no tiling, no register blocking; TVM cannot reverse_compute_inline
    bias+relu into a reduction block): a reference point for mlp.py, not a tuned kernel.
    No parallel loop: at these sizes TVM's spinning thread pool costs more than it saves,
    and on a shared 2-core machine it can cost 100x.
    """
    sch = s_tir.Schedule(func)
    for li in range(layers):
        i, j, k = sch.get_loops(sch.get_sblock(f"dense{li}"))
        sch.reorder(i, k, j)
        sch.vectorize(j)
    return sch.mod


def tvm_mlp(params: list[tuple[np.ndarray, np.ndarray]],
            batch: int) -> Callable[[np.ndarray], np.ndarray] | None:
    """An MLP forward pass (dense+relu layers, softmax) compiled by TVM, or None without TVM.

    ``params`` is ``[(W, b), ...]`` with ``W`` of shape (out, in), as in ``mlc.examples.mlp``.
    The returned function takes ``x`` of shape (batch, in) and returns the softmax
    probabilities as numpy (one buffer, overwritten by the next call); the weights are
    transposed once, here. Same call shape as
    ``torch_forward`` in ``benchmarks/mlp.py``, so it can join its contenders.
    """
    if tvm is None:
        return None
    shapes = [(w.shape[0], w.shape[1]) for w, _ in params]
    func = _mlp_func(shapes, batch)
    f = tvm.compile(_schedule_mlp(func, len(shapes)), target=host_target())["main"]
    # TVM's functions take numpy arrays directly (DLPack, no copy), but its code assumes
    # 64-byte aligned buffers, which numpy does not promise: unaligned ones can crash.
    weights = [_aligned(a) for w, b in params for a in (w.T, b)]
    x_buf = _aligned(np.zeros((batch, shapes[0][1]), "float32"))
    y = _aligned(np.zeros((batch, shapes[-1][0]), "float32"))

    def run(x: np.ndarray) -> np.ndarray:
        np.copyto(x_buf, x)
        f(x_buf, *weights, y)
        return y

    return run


def _aligned(a: np.ndarray, align: int = 64) -> np.ndarray:
    """A C-contiguous float32 copy of ``a`` whose data starts on an ``align``-byte boundary."""
    a = np.asarray(a, "float32")
    raw = np.empty(a.nbytes + align, dtype=np.uint8)
    start = -raw.ctypes.data % align
    out = raw[start:start + a.nbytes].view(np.float32).reshape(a.shape)
    out[...] = a
    return out
