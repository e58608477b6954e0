# ruff: noqa: E501  (the programs print as long lines)
"""The lowering passes as TVM tests them: each pass of `mlc.transform.PASSES` that changes
the running example, Before script -> the pass -> Expected script, compared structurally.
The example is a row sum split into tiles that do not divide it (30 rows in tiles of 8)
with its reduction unrolled by 4, so every pass has something to do; the last program is
built and checked against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc import tir
from mlc.script import from_source
from mlc.transform import pipeline

STAGE_0 = """  # after scheduled
@prim_func
def main(A: Buffer((30, 32), "float32"), C: Buffer((30,), "float32")):
    for i_0 in range(4):
        for k_0 in range(8):
            for i_1 in range(8):
                for k_1 in unroll(4):
                    with block("C"):
                        vi = axis.spatial(30, i_0 * 8 + i_1)
                        vk = axis.reduce(32, k_0 * 4 + k_1)
                        where(i_0 * 8 + i_1 < 30)
                        reads(A[vi, vk])
                        writes(C[vi])
                        with init():
                            C[vi] = 0.0
                        C[vi] = C[vi] + A[vi, vk] * 2.0
"""

STAGE_1 = """  # after lower_blocks
@prim_func
def main(A: Buffer((30, 32), "float32"), C: Buffer((30,), "float32")):
    for i_0 in range(4):
        for k_0 in range(8):
            for i_1 in range(8):
                for k_1 in unroll(4):
                    if i_0 * 8 + i_1 < 30:
                        if k_0 * 4 + k_1 == 0:
                            C[i_0 * 8 + i_1] = 0.0
                        C[i_0 * 8 + i_1] = C[i_0 * 8 + i_1] + A[i_0 * 8 + i_1, k_0 * 4 + k_1] * 2.0
"""

STAGE_2 = """  # after flatten_buffers
@prim_func
def main(A: Buffer((30, 32), "float32"), C: Buffer((30,), "float32")):
    for i_0 in range(4):
        for k_0 in range(8):
            for i_1 in range(8):
                for k_1 in unroll(4):
                    if i_0 * 8 + i_1 < 30:
                        if k_0 * 4 + k_1 == 0:
                            C[i_0 * 8 + i_1] = 0.0
                        C[i_0 * 8 + i_1] = C[i_0 * 8 + i_1] + A[(i_0 * 8 + i_1) * 32 + (k_0 * 4 + k_1)] * 2.0
"""

STAGE_3 = """  # after simplify
@prim_func
def main(A: Buffer((30, 32), "float32"), C: Buffer((30,), "float32")):
    for i_0 in range(4):
        for k_0 in range(8):
            for i_1 in range(8):
                for k_1 in unroll(4):
                    if i_0 * 8 + i_1 < 30:
                        if k_0 == 0 and k_1 == 0:
                            C[i_0 * 8 + i_1] = 0.0
                        C[i_0 * 8 + i_1] = C[i_0 * 8 + i_1] + A[i_0 * 256 + i_1 * 32 + k_0 * 4 + k_1] * 2.0
"""

STAGE_4 = """  # after unroll_loops
@prim_func
def main(A: Buffer((30, 32), "float32"), C: Buffer((30,), "float32")):
    for i_0 in range(4):
        for k_0 in range(8):
            for i_1 in range(8):
                if i_0 * 8 + i_1 < 30:
                    if k_0 == 0 and 0 == 0:
                        C[i_0 * 8 + i_1] = 0.0
                    C[i_0 * 8 + i_1] = C[i_0 * 8 + i_1] + A[i_0 * 256 + i_1 * 32 + k_0 * 4 + 0] * 2.0
                if i_0 * 8 + i_1 < 30:
                    if k_0 == 0 and 1 == 0:
                        C[i_0 * 8 + i_1] = 0.0
                    C[i_0 * 8 + i_1] = C[i_0 * 8 + i_1] + A[i_0 * 256 + i_1 * 32 + k_0 * 4 + 1] * 2.0
                if i_0 * 8 + i_1 < 30:
                    if k_0 == 0 and 2 == 0:
                        C[i_0 * 8 + i_1] = 0.0
                    C[i_0 * 8 + i_1] = C[i_0 * 8 + i_1] + A[i_0 * 256 + i_1 * 32 + k_0 * 4 + 2] * 2.0
                if i_0 * 8 + i_1 < 30:
                    if k_0 == 0 and 3 == 0:
                        C[i_0 * 8 + i_1] = 0.0
                    C[i_0 * 8 + i_1] = C[i_0 * 8 + i_1] + A[i_0 * 256 + i_1 * 32 + k_0 * 4 + 3] * 2.0
"""

STAGE_5 = """  # after unswitch_loops
@prim_func
def main(A: Buffer((30, 32), "float32"), C: Buffer((30,), "float32")):
    for i_0 in range(4):
        for k_0 in range(8):
            if k_0 == 0 and 0 == 0:
                for i_1 in range(8):
                    if i_0 * 8 + i_1 < 30:
                        C[i_0 * 8 + i_1] = 0.0
                        C[i_0 * 8 + i_1] = C[i_0 * 8 + i_1] + A[i_0 * 256 + i_1 * 32 + k_0 * 4 + 0] * 2.0
                    if i_0 * 8 + i_1 < 30:
                        if k_0 == 0 and 1 == 0:
                            C[i_0 * 8 + i_1] = 0.0
                        C[i_0 * 8 + i_1] = C[i_0 * 8 + i_1] + A[i_0 * 256 + i_1 * 32 + k_0 * 4 + 1] * 2.0
                    if i_0 * 8 + i_1 < 30:
                        if k_0 == 0 and 2 == 0:
                            C[i_0 * 8 + i_1] = 0.0
                        C[i_0 * 8 + i_1] = C[i_0 * 8 + i_1] + A[i_0 * 256 + i_1 * 32 + k_0 * 4 + 2] * 2.0
                    if i_0 * 8 + i_1 < 30:
                        if k_0 == 0 and 3 == 0:
                            C[i_0 * 8 + i_1] = 0.0
                        C[i_0 * 8 + i_1] = C[i_0 * 8 + i_1] + A[i_0 * 256 + i_1 * 32 + k_0 * 4 + 3] * 2.0
            else:
                for i_1_1 in range(8):
                    if i_0 * 8 + i_1_1 < 30:
                        C[i_0 * 8 + i_1_1] = C[i_0 * 8 + i_1_1] + A[i_0 * 256 + i_1_1 * 32 + k_0 * 4 + 0] * 2.0
                    if i_0 * 8 + i_1_1 < 30:
                        if k_0 == 0 and 1 == 0:
                            C[i_0 * 8 + i_1_1] = 0.0
                        C[i_0 * 8 + i_1_1] = C[i_0 * 8 + i_1_1] + A[i_0 * 256 + i_1_1 * 32 + k_0 * 4 + 1] * 2.0
                    if i_0 * 8 + i_1_1 < 30:
                        if k_0 == 0 and 2 == 0:
                            C[i_0 * 8 + i_1_1] = 0.0
                        C[i_0 * 8 + i_1_1] = C[i_0 * 8 + i_1_1] + A[i_0 * 256 + i_1_1 * 32 + k_0 * 4 + 2] * 2.0
                    if i_0 * 8 + i_1_1 < 30:
                        if k_0 == 0 and 3 == 0:
                            C[i_0 * 8 + i_1_1] = 0.0
                        C[i_0 * 8 + i_1_1] = C[i_0 * 8 + i_1_1] + A[i_0 * 256 + i_1_1 * 32 + k_0 * 4 + 3] * 2.0
"""

STAGE_6 = """  # after simplify
@prim_func
def main(A: Buffer((30, 32), "float32"), C: Buffer((30,), "float32")):
    for i_0 in range(4):
        for k_0 in range(8):
            if k_0 == 0:
                for i_1 in range(8):
                    if i_0 * 8 + i_1 < 30:
                        C[i_0 * 8 + i_1] = 0.0
                        C[i_0 * 8 + i_1] = C[i_0 * 8 + i_1] + A[i_0 * 256 + i_1 * 32 + k_0 * 4] * 2.0
                    if i_0 * 8 + i_1 < 30:
                        C[i_0 * 8 + i_1] = C[i_0 * 8 + i_1] + A[i_0 * 256 + i_1 * 32 + k_0 * 4 + 1] * 2.0
                    if i_0 * 8 + i_1 < 30:
                        C[i_0 * 8 + i_1] = C[i_0 * 8 + i_1] + A[i_0 * 256 + i_1 * 32 + k_0 * 4 + 2] * 2.0
                    if i_0 * 8 + i_1 < 30:
                        C[i_0 * 8 + i_1] = C[i_0 * 8 + i_1] + A[i_0 * 256 + i_1 * 32 + k_0 * 4 + 3] * 2.0
            else:
                for i_1_1 in range(8):
                    if i_0 * 8 + i_1_1 < 30:
                        C[i_0 * 8 + i_1_1] = C[i_0 * 8 + i_1_1] + A[i_0 * 256 + i_1_1 * 32 + k_0 * 4] * 2.0
                    if i_0 * 8 + i_1_1 < 30:
                        C[i_0 * 8 + i_1_1] = C[i_0 * 8 + i_1_1] + A[i_0 * 256 + i_1_1 * 32 + k_0 * 4 + 1] * 2.0
                    if i_0 * 8 + i_1_1 < 30:
                        C[i_0 * 8 + i_1_1] = C[i_0 * 8 + i_1_1] + A[i_0 * 256 + i_1_1 * 32 + k_0 * 4 + 2] * 2.0
                    if i_0 * 8 + i_1_1 < 30:
                        C[i_0 * 8 + i_1_1] = C[i_0 * 8 + i_1_1] + A[i_0 * 256 + i_1_1 * 32 + k_0 * 4 + 3] * 2.0
"""


STEPS = [
    ("lower_blocks", STAGE_0, STAGE_1),
    ("flatten_buffers", STAGE_1, STAGE_2),
    ("simplify", STAGE_2, STAGE_3),
    ("unroll_loops", STAGE_3, STAGE_4),
    ("unswitch_loops", STAGE_4, STAGE_5),
    ("simplify", STAGE_5, STAGE_6),
]


def _pass(name: str):  # type: ignore[no-untyped-def]
    return dict(pipeline.PASSES)[name]


@pytest.mark.parametrize("name, before, expected", STEPS, ids=[s[0] for s in STEPS])
def test_pass_before_expected(name: str, before: str, expected: str) -> None:
    after = _pass(name)(from_source(before.split("\n", 1)[1]))
    tir.assert_structural_equal(after, from_source(expected.split("\n", 1)[1]),
                                map_free_vars=True)


def test_the_lowered_example_computes_the_row_sums() -> None:
    f = mlc.build(from_source(STEPS[-1][2].split("\n", 1)[1]))
    a = np.random.default_rng(0).standard_normal((30, 32)).astype("float32")
    c = np.zeros(30, "float32")
    f(a, c)
    np.testing.assert_allclose(c, (a * 2).sum(axis=1), rtol=1e-5, atol=1e-5)


def test_unrolled_copies_get_constant_indices_and_unswitch_skips_decided_guards() -> None:
    """unroll_loops gave its copies `0 + k` and unswitch_loops versioned the innermost loop on
    guards like `k_0 == 0 and 0 + 1 == 0` (false in every copy but the first): five versions
    of the tile where two do."""
    unrolled = dict((s[0], s[2]) for s in STEPS)["unroll_loops"]
    assert "0 + " not in unrolled
    unswitched = dict((s[0], s[2]) for s in STEPS)["unswitch_loops"]
    assert unswitched.count("for i_1") == 2
