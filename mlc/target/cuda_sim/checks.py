"""Checks a real GPU would not give you: races, uninitialised shared memory, bad indices,
barriers in divergent branches.

::

    f = mlc.build(sch.mod, target="cuda-sim")
    report = mlc.target.cuda_sim.check(f, x, w, y)   # or f.check(x, w, y)
    print(report)     # kernels run, accesses checked; raises if something is wrong

:func:`check` runs the kernels in the GPU interpreter (:mod:`mlc.target.cuda_sim.interp`),
all threads of a block at once, and remembers for every element of every buffer which thread
last wrote it and which threads read it, and in which *barrier interval* (the stretch of the
kernel between two ``__syncthreads()``). Two accesses of the same element by different
threads, one of them a write, are a **race** (:class:`~mlc.errors.RaceError`) when

* they are in the same barrier interval of the same block (nothing orders them), or
* they come from different blocks (blocks are never ordered) and the element is in global
  memory.

A read of shared memory that no thread of the block wrote since the kernel began is an
:class:`~mlc.errors.UninitializedReadError`; an index outside its buffer a
:class:`~mlc.errors.GPUIndexError`; a barrier that some threads of a block reach and others
skip a :class:`~mlc.errors.BarrierDivergenceError`; a warp shuffle that a lane its mask
names never reaches (or whose lanes pass different masks) a
:class:`~mlc.errors.ShuffleDivergenceError`. Shuffles move registers, not memory: they need
no barrier and the race check does not see them. Each names the kernel, the buffer, the
element, the two threads and the lines of the loop IR (``mlc.lower(..., target="cuda-sim")``
prints the same program).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mlc.errors import GPUCheckError, GPUIndexError, RaceError, UninitializedReadError
from mlc.target.cuda_sim.interp import (
    Access,
    Interpreter,
    Observer,
    OutOfTime,
    gpu_program,
    stmt_line,
)
from mlc.tir import stmt as S
from mlc.tir.functor import post_order_visit
from mlc.tir.printer import to_str

MAX_KEPT = 1 << 16  # elements kept per finding, for the pictures


@dataclass
class Finding:
    """One kind of problem at one pair of statements: every element where it happened."""

    kind: str                  # "write-write race", "read-write race", "uninitialized read"
    kernel: str
    buffer: S.Buffer
    scope: str
    stmt: S.Stmt               # the access that found the problem
    other_stmt: S.Stmt | None  # the earlier access it conflicts with
    elements: np.ndarray       # flat element indices
    lanes: np.ndarray          # the thread that made the access (lane numbers)
    other_lanes: np.ndarray    # the other thread (-1 for an uninitialised read)
    threads: np.ndarray = field(default_factory=lambda: np.zeros((0, 6), np.int64))
    other_threads: np.ndarray = field(default_factory=lambda: np.zeros((0, 6), np.int64))
    count: int = 0             # elements in all (``elements`` keeps at most MAX_KEPT)

    def first(self) -> tuple[int, tuple[int, ...], tuple[int, ...]]:
        """The first element and its two threads as (bx, by, bz, tx, ty, tz)."""
        return (int(self.elements[0]), tuple(int(v) for v in self.threads[0]),
                tuple(int(v) for v in self.other_threads[0]))


@dataclass
class CheckReport:
    """What :func:`check` ran when it found nothing wrong."""

    kernels: list[str]
    blocks: dict[str, tuple[int, int]]   # kernel -> (blocks checked, blocks in the grid)
    accesses: int
    barriers: int
    # kernel -> blockIdx (x[, y[, z]]) of each block run, when not every block ran
    sampled: dict[str, list[tuple[int, ...]]] = field(default_factory=dict)
    stopped: str | None = None   # where the time ran out (what ran before it was checked)
    same_value_writes: int = 0   # accesses that raced but wrote the value already there
    seconds: float = 0.0

    @property
    def complete(self) -> bool:
        """Did every block of every kernel run to its end?"""
        return self.stopped is None and all(c == n for c, n in self.blocks.values())

    def _which(self, kernel: str) -> str:
        """`` (blockIdx (0, 0), (5, 2), ...)`` for a kernel of which a sample ran, else ``""``."""
        c, n = self.blocks[kernel]
        if kernel not in self.sampled or c == n:
            return ""
        return " (blockIdx " + ", ".join(
            "(" + ", ".join(map(str, b)) + ")" for b in self.sampled[kernel]) + ")"

    def _parts(self) -> list[str]:
        return [f"{k}: {c} of {n} blocks{self._which(k)}" for k, (c, n) in self.blocks.items()]

    def summary(self) -> str:
        """One sentence: what ran (for the warning of a check that did not run everything)."""
        ran = "; ".join(f"checked {c} of the {n} blocks of {k}{self._which(k)}"
                        for k, (c, n) in self.blocks.items())
        if self.stopped is not None:
            ran += f"; the time ran out at {self.stopped}: the accesses after it were not checked"
        return ran + ". No problem was found in what ran; the blocks that did not run may race"

    def __repr__(self) -> str:
        head = ("no races, no uninitialised shared reads, all indices in range, barriers "
                "reached by whole blocks")
        if self.stopped is not None:
            head = f"stopped at {self.stopped} (out of time); until then {head}"
        return (f"{head} ({'; '.join(self._parts())}; {self.accesses} accesses, "
                f"{self.barriers} barriers)")


def _threads(interp: Interpreter, lanes: np.ndarray) -> np.ndarray:
    """(bx, by, bz, tx, ty, tz) of each lane (-1 for an axis the kernel does not use)."""
    axis = interp.lanes.axis
    out = np.full((len(lanes), 6), -1, np.int64)
    for col, tag in enumerate(("blockIdx.x", "blockIdx.y", "blockIdx.z",
                               "threadIdx.x", "threadIdx.y", "threadIdx.z")):
        if tag in axis:
            out[:, col] = np.where(lanes >= 0, axis[tag][np.maximum(lanes, 0)], -1)
    return out


class _State:
    """Per-element history of one buffer during one kernel."""

    def __init__(self, n: int) -> None:
        self.w_lane = np.full(n, -1, np.int32)
        self.w_epoch = np.zeros(n, np.int32)
        self.w_stmt = np.zeros(n, np.int32)
        self.r_lane = np.full(n, -1, np.int32)
        self.r_lane2 = np.full(n, -1, np.int32)
        self.r_epoch = np.full(n, -1, np.int32)
        self.r_stmt = np.zeros(n, np.int32)
        self.written = np.zeros(n, bool)


class Checker(Observer):
    """The observer behind :func:`check`; its ``findings`` are every problem seen."""

    def __init__(self) -> None:
        self.findings: list[Finding] = []
        self._groups: dict[tuple[Any, ...], Finding] = {}
        self.accesses = 0
        self.barriers = 0
        self.blocks: dict[str, tuple[int, int]] = {}
        self.sampled: dict[str, list[tuple[int, ...]]] = {}
        self.same_value_writes = 0
        self.written: set[int] = set()

    def begin_kernel(self, interp: Interpreter, kernel: S.KernelLaunch) -> None:
        self.state: dict[int, _State] = {}
        self._locals: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.stmts: list[S.Stmt] = []
        self.stmt_ids: dict[int, int] = {}
        lanes = interp.lanes
        self.written = _written(kernel)
        self.blocks[kernel.name] = (lanes.n_blocks, interp.n_blocks_total)
        firsts = np.arange(lanes.n_blocks) * lanes.threads_per_block
        axes = [lanes.axis[t][firsts] for t in ("blockIdx.x", "blockIdx.y", "blockIdx.z")
                if t in lanes.axis]
        if lanes.n_blocks < interp.n_blocks_total:
            self.sampled[kernel.name] = [tuple(int(a[b]) for a in axes)
                                         for b in range(lanes.n_blocks)]

    def barrier(self, interp: Interpreter, stmt: S.Stmt) -> None:
        self.barriers += 1

    def _stmt_id(self, s: S.Stmt) -> int:
        key = id(s)
        if key not in self.stmt_ids:
            self.stmt_ids[key] = len(self.stmts)
            self.stmts.append(s)
        return self.stmt_ids[key]

    def access(self, interp: Interpreter, a: Access) -> None:
        if len(a.lanes) == 0:
            return
        if a.scope == "local":
            self._local(interp, a)
            return
        self.accesses += len(a.lanes)
        buf_key = id(a.buffer.data)
        if a.scope == "global" and buf_key not in self.written:
            return  # an array this kernel only reads: no race, nothing to remember
        size = interp.mem[buf_key].shape[-1]
        if a.scope == "shared":
            keys = interp.lanes.block_slot[a.lanes].astype(np.int64) * size + a.elems
            n = size * interp.lanes.n_blocks
        else:
            keys, n = a.elems, size
        st = self.state.get(buf_key)
        if st is None:
            st = self.state[buf_key] = _State(n)
        me = a.lanes.astype(np.int32)
        cur = a.epoch
        sid = self._stmt_id(a.stmt)
        block = interp.lanes.block_slot

        def ordered(other: np.ndarray, epoch: np.ndarray) -> np.ndarray:
            """True where the earlier access by ``other`` is NOT ordered before this one."""
            if other.size and int(other.max()) < 0:
                return np.zeros(other.shape, bool)  # nobody touched these elements yet
            same = epoch == cur
            if a.scope == "global":
                same = same | (block[np.maximum(other, 0)] != block[me])
            return (other >= 0) & (other != me) & same

        if a.is_write:
            # a thread writing the value the element already holds changes nothing (every
            # thread copying the same tile): a harmless race, not reported
            old = interp.mem[buf_key]
            old = old[interp.lanes.block_slot[a.lanes], a.elems] if a.scope == "shared" \
                else old[a.elems]
            vals = a.values if a.values is not None else old
            changes = ~_same(old, vals)
            _, lo, hi = _readers(keys, me, n)
            if (lo != hi).any():  # an element two threads write in this one statement
                order = np.argsort(keys, kind="stable")
                ks, ls, vs = keys[order], me[order], vals[order]
                pair = (ks[1:] == ks[:-1]) & (ls[1:] != ls[:-1])
                dup = pair & ~_same(vs[1:], vs[:-1])
                self.same_value_writes += int(pair.sum() - dup.sum())
                if dup.any():
                    self._add(interp, a, "write-write race", sid, ks[1:][dup], ls[1:][dup],
                              ls[:-1][dup], sid)
            w = st.w_lane[keys]
            unordered = ordered(w, st.w_epoch[keys])
            bad = unordered & changes
            self.same_value_writes += int((unordered & ~changes).sum())
            if bad.any():
                self._add_from(interp, a, "write-write race", keys, me, w, st.w_stmt, bad)
            r = st.r_lane[keys]
            r_epoch = st.r_epoch[keys]
            other = np.where(r == me, st.r_lane2[keys], r)
            unordered = ordered(other, r_epoch)
            bad = unordered & changes
            self.same_value_writes += int((unordered & ~changes).sum())
            if bad.any():
                self._add_from(interp, a, "read-write race", keys, me, other, st.r_stmt, bad)
            st.w_lane[keys] = me
            st.w_epoch[keys] = cur
            st.w_stmt[keys] = sid
            st.written[keys] = True
            return
        w = st.w_lane[keys]
        bad = ordered(w, st.w_epoch[keys])
        if bad.any():
            self._add_from(interp, a, "write-read race", keys, me, w, st.w_stmt, bad)
        if a.scope == "shared":
            fresh_read = ~st.written[keys]
            if fresh_read.any():
                self._add(interp, a, "uninitialized read", sid, keys[fresh_read],
                          me[fresh_read], np.full(int(fresh_read.sum()), -1, np.int32), None)
        # remember up to two distinct readers per element and interval
        uk, lmin, lmax = _readers(keys, me, len(st.r_lane))
        old = st.r_lane[uk]
        fresh = (st.r_epoch[uk] != cur) | (old < 0)
        cand = np.where(lmin != old, lmin, np.where(lmax != old, lmax, -1))
        old2 = st.r_lane2[uk]
        st.r_lane2[uk] = np.where(fresh, np.where(lmax != lmin, lmax, -1),
                                  np.where(old2 >= 0, old2, cand))
        st.r_lane[uk] = np.where(fresh, lmin, old)
        st.r_epoch[uk] = cur
        st.r_stmt[uk] = np.where(fresh, sid, st.r_stmt[uk])

    def _local(self, interp: Interpreter, a: Access) -> None:
        """A thread reading an element of its own ``"local"`` copy that it has not written
        since the buffer was allocated (an uninitialised register: a copy loop bound to
        threadIdx fills only the thread's own element of each thread's copy)."""
        arr = interp.mem[id(a.buffer.data)]
        kept = self._locals.get(id(a.buffer.data))
        if kept is None or kept[0] is not arr:  # allocated again (inside a loop): all fresh
            kept = self._locals[id(a.buffer.data)] = (arr, np.zeros(arr.size, bool))
        written = kept[1]
        keys = a.lanes.astype(np.int64) * arr.shape[-1] + a.elems
        if a.is_write:
            written[keys] = True
            return
        fresh = ~written[keys]
        if fresh.any():
            self._add(interp, a, "uninitialized read", self._stmt_id(a.stmt), keys[fresh],
                      a.lanes[fresh].astype(np.int32),
                      np.full(int(fresh.sum()), -1, np.int32), None)

    def _add_from(self, interp: Interpreter, a: Access, kind: str, keys: np.ndarray,
                  me: np.ndarray, other: np.ndarray, stmts: np.ndarray,
                  bad: np.ndarray) -> None:
        sid = self._stmt_id(a.stmt)
        other_sids = stmts[keys[bad]]
        for osid in np.unique(other_sids):
            sel = np.flatnonzero(bad)[other_sids == osid]
            self._add(interp, a, kind, sid, keys[sel], me[sel], other[sel], int(osid))

    def _add(self, interp: Interpreter, a: Access, kind: str, sid: int, keys: np.ndarray,
             lanes: np.ndarray, others: np.ndarray, other_sid: int | None) -> None:
        size = interp.mem[id(a.buffer.data)].shape[-1]
        elems = keys % size if a.scope in ("shared", "local") else keys
        group = (kind, a.kernel.name, id(a.buffer.data), sid, other_sid)
        f = self._groups.get(group)
        if f is None:
            other_stmt = self.stmts[other_sid] if other_sid is not None else None
            f = Finding(kind, a.kernel.name, a.buffer, a.scope, a.stmt, other_stmt,
                        np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.int32))
            self._groups[group] = f
            self.findings.append(f)
        f.count += len(elems)
        room = MAX_KEPT - len(f.elements)
        if room > 0:
            f.elements = np.concatenate([f.elements, elems[:room].astype(np.int64)])
            f.lanes = np.concatenate([f.lanes, lanes[:room]])
            f.other_lanes = np.concatenate([f.other_lanes, others[:room]])
            f.threads = np.concatenate([f.threads, _threads(interp, lanes[:room])])
            f.other_threads = np.concatenate([f.other_threads, _threads(interp, others[:room])])


def _written(kernel: S.KernelLaunch) -> set[int]:
    """The buffers (data ids) that ``kernel`` stores to."""
    found: set[int] = set()

    def visit(n: object) -> None:
        if isinstance(n, S.BufferStore):
            found.add(id(n.buffer.data))

    post_order_visit(kernel.body, visit)
    return found


def _readers(keys: np.ndarray, lanes: np.ndarray,
             size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct ``keys`` (sorted) and the smallest and largest lane reading each. A
    scatter into arrays of the state's size where that is not much bigger than the access
    (one pass, no sort), else a sort."""
    if size <= 8 * len(keys):
        lo = np.full(size, np.iinfo(np.int32).max, np.int32)
        hi = np.full(size, -1, np.int32)
        np.minimum.at(lo, keys, lanes)
        np.maximum.at(hi, keys, lanes)
        uk = np.flatnonzero(hi >= 0)
        return uk, lo[uk], hi[uk]
    order = np.argsort(keys, kind="stable")
    ks, ls = keys[order], lanes[order]
    starts = np.flatnonzero(np.r_[True, ks[1:] != ks[:-1]])
    return ks[starts], np.minimum.reduceat(ls, starts), np.maximum.reduceat(ls, starts)


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Bitwise equality (a NaN equals the same NaN)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind == "f" and a.dtype == b.dtype:
        view = {2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize]
        return a.view(view) == b.view(view)
    return a == b


def describe_element(buf: S.Buffer, flat: int) -> str:
    """``Y[3, 5]`` for a buffer whose shape is known, else ``X_shared[37]``."""
    try:
        shape = tuple(int(d.value) for d in buf.shape)  # type: ignore[attr-defined]
    except (AttributeError, TypeError):
        return f"{buf.name}[{flat}]"
    if len(shape) > 1 and 0 <= flat < int(np.prod(shape)):
        idx = ", ".join(str(int(i)) for i in np.unravel_index(flat, shape))
        return f"{buf.name}[{idx}]"
    return f"{buf.name}[{flat}]"


def _who(t: tuple[int, ...]) -> str:
    """``blockIdx (1, 0), threadIdx (5, 2)``: (x, y, z) of the axes the kernel uses."""
    b = ", ".join(str(v) for v in t[:3] if v >= 0)
    th = ", ".join(str(v) for v in t[3:] if v >= 0)
    return f"blockIdx ({b}), threadIdx ({th})"


_VERB = {"write-write race": ("wrote", "wrote"), "read-write race": ("wrote", "read"),
         "write-read race": ("read", "wrote")}


def _message(func: S.PrimFunc, f: Finding, total: int) -> str:
    elem, me, other = f.first()
    where = f"{describe_element(f.buffer, elem)} ({f.scope} memory)"
    line, _ = stmt_line(func, f.stmt)
    marks: dict[Any, str] = {f.stmt: "this thread"}
    more = (f"; {f.count} accesses like it in all" if f.count > 1 else "") + (
        f"; {total - 1} other problems" if total > 1 else "")
    if f.kind == "uninitialized read" and f.scope == "local":
        text = to_str(func, mark={f.stmt: "reads here"})
        return (
            f"kernel {f.kernel}: {_who(me)} reads {where} at line {line}, but that thread has "
            f"not written that element of its own copy since it was allocated (each thread "
            f"has its own copy of a local buffer, which starts as garbage){more}. A copy into "
            f"{f.buffer.name} whose loop is bound to threadIdx fills only each thread's own "
            f"element: use a 'shared' buffer for a copy the threads make together, or leave "
            f"the copy loop unbound so that each thread copies all it reads.\n{text}"
        )
    if f.kind == "uninitialized read":
        marks = {f.stmt: "reads here"}
        text = to_str(func, mark=marks)
        return (
            f"kernel {f.kernel}: {_who(me)} reads {where} at line {line}, but no thread of its "
            f"block has written that element since the kernel began (shared memory starts as "
            f"garbage){more}. Check that the copy into {f.buffer.name} covers every element "
            f"the computation reads, and that it runs before the read.\n{text}"
        )
    my_verb, other_verb = _VERB[f.kind]
    other_line = stmt_line(func, f.other_stmt)[0] if f.other_stmt is not None else line
    if f.other_stmt is f.stmt or f.other_stmt is None:
        marks = {f.stmt: "both threads"}
    else:
        marks = {f.other_stmt: "first thread", f.stmt: "second thread"}
    text = to_str(func, mark=marks)
    same_block = me[:3] == other[:3]
    if f.scope == "shared" or same_block:
        why = "with no __syncthreads() between them"
        hint = ("Put a barrier between the two accesses (insert_thread_sync does it for "
                "schedules), or give each thread its own element.")
    else:
        why = "from different blocks, which the GPU never orders"
        hint = ("Each block must write its own elements: a loop bound to blockIdx/threadIdx "
                "must be a spatial loop of the output (binding a reduction loop makes threads "
                "add into the same element; keep it serial inside the thread or use rfactor).")
    if f.stmt is f.other_stmt and my_verb == other_verb:
        said = f"{_who(other)} and {_who(me)} both write {where} at line {line}"
    elif f.stmt is f.other_stmt:
        said = f"{_who(other)} {other_verb} and {_who(me)} {my_verb} {where} at line {line}"
    else:
        said = (f"{_who(other)} {other_verb} {where} at line {other_line} and {_who(me)} "
                f"{my_verb} it at line {line}")
    return f"kernel {f.kernel}: data race ({f.kind}): {said}, {why}{more}. {hint}\n{text}"


def error_for(func: S.PrimFunc, findings: list[Finding]) -> GPUCheckError:
    """The typed error for the first finding (races first), holding all of them."""
    races = [f for f in findings if f.kind != "uninitialized read"]
    first = (races or findings)[0]
    cls = RaceError if first.kind != "uninitialized read" else UninitializedReadError
    return cls(_message(func, first, len(findings)), findings)


def out_of_range(interp: Interpreter, buf: S.Buffer, elem: int, size: int, lane: int,
                 is_write: bool) -> GPUIndexError:
    """The error for an index ``elem`` outside ``buf`` (``size`` elements) by ``lane``."""
    line, text = stmt_line(interp.func, interp.stmt)
    who = _who(tuple(int(v) for v in _threads(interp, np.array([lane]))[0]))
    scope = interp.buffers[id(buf.data)].scope if id(buf.data) in interp.buffers else "global"
    return GPUIndexError(
        f"kernel {interp.kernel.name}: {who} {'writes' if is_write else 'reads'} element "
        f"{elem} of {buf.name} ({scope} memory, {size} elements) at line {line}: outside the "
        "buffer. Check the split factors against the shape (a split that does not divide "
        "needs its guard) and the region a copy stage covers.\n" + text
    )


def check(f: Any, *arrays: np.ndarray, blocks: int | None = None) -> CheckReport:
    """Run the kernels of ``f`` (a module built with ``target="cuda-sim"`` or ``"cuda"``, or
    a GPU program) on ``arrays`` in the checking interpreter; raise the first problem found
    (:class:`~mlc.errors.RaceError`, :class:`~mlc.errors.UninitializedReadError`,
    :class:`~mlc.errors.GPUIndexError`, :class:`~mlc.errors.BarrierDivergenceError`) or
    return a :class:`CheckReport`. The outputs are written as by ``f(*arrays)``.

    ``blocks=n`` checks only ``n`` blocks of each kernel (spread over the grid, the first and
    last included, each with its neighbours in x and y, so that neighbouring blocks that
    touch the same elements are seen), for big grids; only their outputs are written then.
    (A cuda-sim module checks its calls itself: :mod:`mlc.target.cuda_sim.call_checks`.)"""
    return check_program(gpu_program(f), list(arrays), blocks=blocks)


def check_program(func: S.PrimFunc, arrays: list[Any], blocks: int | None = None,
                  deadline: float | None = None) -> CheckReport:
    """:func:`check` of a GPU program; with ``deadline`` (a ``time.process_time()`` value) it
    stops once that time has passed and returns a report whose ``stopped`` says where (a
    problem found before then is raised as usual)."""
    checker = Checker()
    stopped = None
    interp = Interpreter(func, [checker], blocks=blocks, neighbours=True, deadline=deadline)
    interp.vectorize_loops = True
    try:
        interp.run(*arrays)
    except OutOfTime as out:
        stopped = out.where
    if checker.findings:
        raise error_for(func, checker.findings)
    return CheckReport(list(checker.blocks), checker.blocks, checker.accesses, checker.barriers,
                       checker.sampled, stopped, checker.same_value_writes)
