"""Frontends: import models from other frameworks (each optional)."""

from mlc.graph.frontend.onnx import from_onnx
from mlc.graph.frontend.torch import from_torch

__all__ = ["from_onnx", "from_torch"]
