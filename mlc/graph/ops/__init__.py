"""Registers every op (importing this package fills the registry)."""

from mlc.graph.ops import nn, quantize, tensor  # noqa: F401
