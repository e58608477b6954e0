"""Run the iterations of an accumulating loop at once: each thread's sum (or any chain of
``X[e] = X[e] + v`` and ``X[e] = v``) folded in iteration order, exactly as one by one.

A loop like the ``k`` loop of a matmul carries a value from one iteration to the next::

    for k in range(K):                            v[t, k] = A[i, k] * B[k, j]  for all k at once
        if k == 0:                        ->      Y[i, j] = fold of Y[i, j] over k:
            Y[i, j] = 0.0                                   0.0 where k == 0, then + v[t, k]
        Y[i, j] = Y[i, j] + A[i, k] * B[k, j]

:func:`mlc.target.cuda_sim.vectorize.independent` refuses it (every iteration writes
``Y[i, j]``), and one numpy step per iteration made a long loop (a thread adding up a
million numbers) take minutes to check. Here every value ``v`` is computed for all
iterations at once (as extra lanes of the same threads), then folded per thread in the
order the iterations run: ``numpy.add.accumulate`` when every update adds in the buffer's
floating-point type (it adds one after the other, so the rounding is the loop's),
otherwise a loop over the iterations on whole columns. Every read and write of the
accumulated element is reported to the observers with the value it writes, as if the
iterations had run one by one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from mlc.target.cuda_sim.lanes import np_dtype
from mlc.target.cuda_sim.vectorize import Accumulators
from mlc.tir import stmt as S

if TYPE_CHECKING:
    from mlc.target.cuda_sim.interp import Interpreter


def run(interp: Interpreter, loop: S.For, lo: int, count: int, mask: np.ndarray | None,
        acc: Accumulators) -> bool:
    """Iterations ``lo .. lo + count - 1`` of ``loop`` with its accumulators folded; False
    (nothing run) where this does not apply here."""
    n = interp.n_lanes
    if interp._lane_map is not None or (mask is not None and mask.shape != (n, 1)):
        return False
    # the accumulated element of each thread (the same in every iteration), checked
    targets: dict[int, tuple[S.Buffer, np.ndarray, np.ndarray]] = {}
    for _, _, st in acc.stores.values():
        key = id(st.buffer.data)
        if key not in targets:
            interp.stmt = st
            flat = interp._flat(st.buffer, st.indices, mask)
            idx = np.broadcast_to(np.asarray(flat, np.int64), (n, 1))[:, 0]
            rows = np.arange(n) if mask is None else np.flatnonzero(mask[:, 0])
            elems = idx[rows]
            size = interp.mem[key].shape[-1]
            if ((elems < 0) | (elems >= size)).any():
                return False  # one by one: the error where (and if) a store reaches it
            targets[key] = (st.buffer, rows, elems)
    records: list[tuple[S.BufferStore, str, np.ndarray, np.ndarray]] = []
    interp._fold = {k: (kind, value) for k, (kind, value, _) in acc.stores.items()}
    interp._fold_records = records
    try:
        interp._run_at_once(loop, lo, count, mask, nest=False)
    finally:
        interp._fold = None
        interp._fold_records = None
    for key, (buf, rows, elems) in targets.items():
        mine = [r for r in records if id(r[0].buffer.data) == key]
        _fold(interp, buf, rows, elems, mine, n, count)
    return True


def record(interp: Interpreter, st: S.BufferStore, mask: np.ndarray | None) -> None:
    """An accumulator's store met while the iterations run at once: its values for every
    iteration, kept for the fold."""
    kind, value = interp._fold[id(st)]  # type: ignore[index]
    n = interp.n_lanes
    v = np.broadcast_to(np.asarray(interp._eval(value, mask)), (n, 1))[:, 0]
    active = np.ones(n, bool) if mask is None else np.broadcast_to(mask, (n, 1))[:, 0]
    interp._fold_records.append((st, kind, v, active))  # type: ignore[union-attr]


def _fold(interp: Interpreter, buf: S.Buffer, rows: np.ndarray, elems: np.ndarray,
          records: list[tuple[S.BufferStore, str, np.ndarray, np.ndarray]], n: int,
          count: int) -> None:
    arr = interp.mem[id(buf.data)]
    dtype = np_dtype(buf.dtype)
    lanes = rows  # not inside another loop run at once: a row is a thread
    place = interp._row(buf, lanes)
    y0 = arr[elems] if place is None else arr[place, elems]
    R = len(records)
    vals = np.stack([r[2].reshape(n, count)[rows] for r in records], axis=2)
    act = np.stack([r[3].reshape(n, count)[rows] for r in records], axis=2)
    kinds = [r[1] for r in records]
    with np.errstate(all="ignore"):
        if all(k == "add" for k in kinds) and dtype.kind == "f" and \
                np.result_type(dtype, vals.dtype) == dtype:
            steps = np.where(act, vals.astype(dtype), dtype.type(-0.0))  # x + -0.0 == x
            flat = np.concatenate([y0.reshape(-1, 1), steps.reshape(len(rows), count * R)],
                                  axis=1)
            history = np.add.accumulate(flat, axis=1)[:, 1:].reshape(len(rows), count, R)
        else:
            history = np.empty((len(rows), count, R), dtype)
            y = y0.copy()
            for k in range(count):
                for r in range(R):
                    a = act[:, k, r]
                    new = (y + vals[:, k, r]) if kinds[r] == "add" else vals[:, k, r]
                    y = np.where(a, np.asarray(new).astype(dtype), y)
                    history[:, k, r] = y
    for r, (st, kind, _, _) in enumerate(records):  # what ran, as one by one
        a = act[:, :, r]
        who = np.broadcast_to(lanes[:, None], a.shape)[a]
        where = np.broadcast_to(elems[:, None], a.shape)[a]
        interp.stmt = st
        if kind == "add":
            interp._notify(buf, who, where, False)
        interp._notify(buf, who, where, True, history[:, :, r][a])
    if len(rows):
        final = history[:, -1, -1]
        if place is None:
            arr[elems] = final
        else:
            arr[place, elems] = final
