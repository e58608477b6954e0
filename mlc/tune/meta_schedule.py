"""``from mlc import meta_schedule as ms``: the MLC course's MetaSchedule spelling of tuning.

The course's programs run as written (``tvm`` become ``mlc``)::

    sch_tuned = ms.tune_tir(
        mod=MyModule,
        target="llvm",
        config=ms.TuneConfig(max_trials_global=64, num_trials_per_iter=64),
        space=ms.space_generator.ScheduleFn(stochastic_schedule_mm),   # or the default space
        work_dir="./tune_tmp",
        task_name="main",
    )
    sch_tuned.mod.show(); sch_tuned.trace

and with a GPU tag, ``target="nvidia/tesla-p100"``: on a machine with an NVIDIA GPU the
candidates run on it; **without one they are measured by cuda-sim's performance model** of
that GPU (:mod:`mlc.target.cuda_sim.model`: each candidate built for ``cuda-sim``, checked
against the unscheduled program, its time predicted from counted memory sectors, bank
conflicts, FLOPs and occupancy), and ``tune_tir`` says so in a warning and in
``sch_tuned.measured_with``. The default space for a GPU target tiles the spatial loops of
each block three ways and binds the outer parts to ``blockIdx.x`` and the middle ones to
``threadIdx.x`` (:func:`gpu_space`).
"""

from __future__ import annotations

import dataclasses
import pickle
import warnings
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np

from mlc.errors import MLCError, TuneError
from mlc.tir.schedule import Schedule
from mlc.tir.stmt import PrimFunc
from mlc.tune.measure import MeasureOption, measure_option, whole_number
from mlc.tune.record import MeasureResult
from mlc.tune.sampled import tune_tir as _tune_tir


@dataclasses.dataclass(frozen=True)
class TuneConfig:
    """MetaSchedule's tuning budget: ``max_trials_global`` candidates measured in all;
    ``num_trials_per_iter`` per round of the search (mlc's tuner takes its own rounds, so
    it is checked and kept, not used)."""

    max_trials_global: int = 64
    num_trials_per_iter: int = 64
    max_trials_per_task: int | None = None
    strategy: str = "evolutionary"

    def __post_init__(self) -> None:
        whole_number("TuneConfig: max_trials_global", self.max_trials_global)
        whole_number("TuneConfig: num_trials_per_iter", self.num_trials_per_iter)
        if self.max_trials_per_task is not None:
            whole_number("TuneConfig: max_trials_per_task", self.max_trials_per_task)
        if self.strategy not in ("evolutionary", "replay_trace", "random"):
            raise TuneError(f"TuneConfig: strategy={self.strategy!r}; use 'evolutionary' (mlc: "
                            "its xgboost-guided search), 'replay_trace' or 'random'")

    @property
    def trials(self) -> int:
        return min(self.max_trials_global, self.max_trials_per_task or self.max_trials_global)


class ScheduleFn:
    """``ms.space_generator.ScheduleFn(fn)``: the search space is ``fn(sch)``, a function that
    schedules with ``sample_*`` decisions (it may return the schedule or nothing)."""

    def __init__(self, sch_fn: Callable[[Schedule], Any]) -> None:
        if not callable(sch_fn):
            raise TuneError(f"ScheduleFn takes a function of a Schedule, got {sch_fn!r}")
        self.sch_fn = sch_fn

    def __call__(self, sch: Schedule) -> None:
        self.sch_fn(sch)


space_generator = SimpleNamespace(ScheduleFn=ScheduleFn)


def gpu_space(sch: Schedule) -> None:
    """The default GPU space: for each block, its spatial loops split in three (sampled),
    the outer parts fused onto ``blockIdx.x``, the middle ones onto ``threadIdx.x``, the
    reduce loops and the inner parts inside each thread."""
    from mlc.tir.schedule import state
    from mlc.tune.tiling import _classify

    names = [loc.stmt.block.name for loc in state.all_blocks(sch.mod)]  # type: ignore[attr-defined]
    for name in names:
        block = sch.get_block(name)
        loops = sch.get_loops(block)
        if not loops:
            continue
        spatial, reduce = _classify(sch, block, loops)
        if not spatial:
            continue
        outer, middle, inner = [], [], []
        for loop in spatial:
            f = sch.sample_perfect_tile(loop, n=3, max_innermost_factor=4)
            o, m, i = sch.split(loop, factors=f)
            outer.append(o)
            middle.append(m)
            inner.append(i)
        sch.reorder(*outer, *middle, *reduce, *inner)
        bx = sch.fuse(*outer) if len(outer) > 1 else outer[0]
        tx = sch.fuse(*middle) if len(middle) > 1 else middle[0]
        sch.bind(bx, "blockIdx.x")
        sch.bind(tx, "threadIdx.x")


# -- measuring GPU candidates without a GPU -----------------------------------------------------

# Tesla P100 (SXM2, Pascal GP100; NVIDIA Tesla P100 whitepaper): 56 SMs of 64 FP32 lanes at
# 1.48 GHz boost (10.6 TFLOPS FP32), HBM2 at 732 GB/s peak (about 550 reached by a streaming
# kernel), 4 MB L2, 64 KB shared memory per SM (48 KB per block), 2048 threads and 32 blocks
# per SM. L2 bandwidth: about 1.6 TB/s (published microbenchmarks).
def _profiles() -> dict[str, Any]:
    from mlc.target.cuda_sim.model import PROFILES, GPUProfile

    return {
        "nvidia/tesla-p100": GPUProfile(
            "NVIDIA Tesla P100 SXM2", sms=56, clock_ghz=1.48, dram_gbs=550.0,
            l2_bytes=4 * 2**20, l2_gbs=1600.0, fp32_lanes=64, shared_per_sm=64 * 1024,
            max_blocks_per_sm=32, launch_us=5.0),
        "nvidia/nvidia-h100": PROFILES["h100"],
        "nvidia/geforce-rtx-3050-laptop": PROFILES["rtx3050-laptop"],
    }


def _inputs(func: PrimFunc, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for buf in func.params:
        shape = tuple(int(d) for d in buf.shape)
        dtype = np.dtype(buf.dtype)
        out.append(rng.integers(1, 8, shape).astype(dtype) if dtype.kind in "iu"
                   else rng.uniform(-1, 1, shape).astype(dtype))
    return out


class ModelRunner:
    """A runner (``MeasureOption.runner``) that "measures" a GPU candidate with the
    performance model: built for cuda-sim, run once and checked against the reference,
    then its time on ``gpu`` predicted. Nothing is timed, so the search is the same on
    any machine."""

    def __init__(self, gpu: Any, rtol: float = 1e-3) -> None:
        self.gpu = gpu
        self.rtol = rtol
        self._expected: dict[int, list[np.ndarray]] = {}

    def measure(self, measurer: Any, funcs: list[PrimFunc]) -> list[MeasureResult]:
        import mlc
        from mlc.target.cuda_sim.model import predict

        reference = pickle.loads(measurer._ref)
        key = id(measurer)
        if key not in self._expected:
            arrays = _inputs(reference)
            mlc.build(reference, target="llvm")(*arrays)
            self._expected[key] = arrays
        expected = self._expected[key]
        results = []
        for func in funcs:
            try:
                f = mlc.build(func, target="cuda-sim")
                arrays = _inputs(reference)
                for k, a in enumerate(arrays):
                    if k == len(arrays) - 1:
                        a[...] = 0
                f(*arrays)
                if not np.allclose(arrays[-1], expected[-1], rtol=self.rtol, atol=self.rtol):
                    results.append(MeasureResult([], "wrong answer: differs from the "
                                                     "unscheduled program"))
                    continue
                p = predict(f, *_inputs(reference), gpu=self.gpu, blocks=2, loops=2)
                results.append(MeasureResult([float(p.time)]))
            except MLCError as err:
                results.append(MeasureResult([], f"{type(err).__name__}: "
                                                 f"{str(err).splitlines()[0]}"))
        return results


def _prim_func(mod: Any, task_name: str) -> PrimFunc:
    if isinstance(mod, PrimFunc):
        return mod
    functions = getattr(mod, "functions", None)
    if isinstance(functions, dict):
        prims = {k: v for k, v in functions.items() if isinstance(v, PrimFunc)}
        if task_name in prims:
            return prims[task_name]
        if len(prims) == 1:
            return next(iter(prims.values()))
        raise TuneError(f"tune_tir: the module has prim_funcs {sorted(prims)}; task_name= "
                        f"names the one to tune (got {task_name!r})")
    raise TuneError(f"tune_tir: mod is a PrimFunc or an IRModule, got {type(mod).__name__}")


def tune_tir(mod: Any, target: Any = "llvm", config: TuneConfig | None = None,
             work_dir: str | None = None, task_name: str = "main", space: Any = None,
             max_trials_global: int | None = None, num_trials_per_iter: int | None = None,
             seed: int = 0, progress: bool = True) -> Schedule:
    """MetaSchedule's ``tune_tir`` (see the module docstring): the best Schedule found, with
    ``measured_with`` saying how candidates were timed."""
    from mlc.runtime import cuda_driver
    from mlc.target import parse_target

    if config is None:
        config = TuneConfig(max_trials_global=max_trials_global or 64,
                            num_trials_per_iter=num_trials_per_iter or 64)
    elif max_trials_global is not None or num_trials_per_iter is not None:
        raise TuneError("tune_tir: give the budget once, in config= or as max_trials_global=")
    func = _prim_func(mod, task_name)
    tgt = parse_target(target)
    option: MeasureOption | None = None
    build_target: Any = target
    measured = f"timed on this machine ({tgt})"
    if tgt.has_feature("gpu") and tgt.kind.value == "cuda" and not cuda_driver.available():
        name = tgt.tag or "nvidia/nvidia-h100"
        profiles = _profiles()
        if name not in profiles:
            raise TuneError(f"tune_tir: no GPU here, and mlc's performance model has no "
                            f"profile of {name}; use one of {sorted(profiles)}")
        gpu = profiles[name]
        measured = (f"predicted by cuda-sim's performance model of the {gpu.name} (no GPU "
                    "on this machine: nothing was timed)")
        warnings.warn(f"tune_tir: {measured}", stacklevel=2)
        option = dataclasses.replace(measure_option(),
                                     runner=ModelRunner(gpu))  # type: ignore[arg-type]
        build_target = "cuda-sim"
    elif tgt.has_feature("gpu") and tgt.tag is not None:
        # a GPU is here: time on it, compiled for its own architecture (code for the tag's
        # sm_60 may not load on a newer GPU), and say which GPU measured
        build_target = "cuda"
        measured = (f"timed on this machine's GPU, compiled for it (the target named "
                    f"{tgt.tag})")
    if space is None:
        space = gpu_space if tgt.has_feature("gpu") else None
    best = _tune_tir(func, max_trials=config.trials, space=space, target=build_target,
                     work_dir=work_dir, measure_option=option, seed=seed, progress=progress,
                     tuner="random" if config.strategy == "random" else "xgb")
    best.measured_with = measured  # type: ignore[attr-defined]
    best.task_name = task_name  # type: ignore[attr-defined]
    return best


__all__ = ["ModelRunner", "ScheduleFn", "TuneConfig", "gpu_space", "space_generator",
           "tune_tir"]
