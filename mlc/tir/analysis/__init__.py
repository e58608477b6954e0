"""Analyses of the loop IR: structural equality/hashing."""

from mlc.tir.analysis.structural import (
    assert_structural_equal,
    structural_equal,
    structural_hash,
)

__all__ = ["assert_structural_equal", "structural_equal", "structural_hash"]
