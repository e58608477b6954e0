"""Registers every op (importing this package fills the registry)."""

from mlc.graph.ops import nn, tensor  # noqa: F401
