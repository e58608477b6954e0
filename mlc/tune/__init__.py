"""Automatic optimization: search spaces, a learned cost model, simulated annealing, and safe
measurement (TVM's AutoTVM and MetaSchedule, small enough to read)."""

from mlc.tune import callback
from mlc.tune.executor import DaskExecutor, Executor, LocalExecutor, timing_lock
from mlc.tune.features import flop_count, itervar_features, loop_context
from mlc.tune.measure import (
    DaskRunner,
    LocalBuilder,
    LocalRunner,
    MeasureOption,
    Measurer,
    measure_option,
)
from mlc.tune.model import XGBoostCostModel, pairwise_accuracy, rank_correlation
from mlc.tune.record import MeasureResult, apply_history_best, load
from mlc.tune.sampled import SampledSpace, tune_tir
from mlc.tune.space import ConfigEntity, ConfigSpace, TuneError
from mlc.tune.task import Task, create_task, get_config, template
from mlc.tune.tiling import default_space
from mlc.tune.tuner import GridSearchTuner, RandomTuner, Tuner, XGBTuner

__all__ = [
    "callback", "flop_count", "itervar_features", "loop_context", "pairwise_accuracy",
    "MeasureOption", "Measurer", "measure_option",
    "XGBoostCostModel", "rank_correlation", "MeasureResult", "apply_history_best", "load",
    "ConfigEntity", "ConfigSpace", "TuneError", "Task", "create_task", "get_config", "template",
    "GridSearchTuner", "RandomTuner", "Tuner", "XGBTuner", "default_space", "SampledSpace",
    "tune_tir", "DaskRunner", "LocalBuilder", "LocalRunner", "DaskExecutor", "Executor",
    "LocalExecutor", "timing_lock",
]
