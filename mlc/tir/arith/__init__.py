"""Integer arithmetic on the loop IR: bounds, the simplifier, regions."""

from mlc.tir.arith.analyzer import Analyzer, simplify
from mlc.tir.arith.evaluate import evaluate_int, evaluate_known
from mlc.tir.arith.region import eval_region

__all__ = ["Analyzer", "simplify", "evaluate_int", "evaluate_known", "eval_region"]
