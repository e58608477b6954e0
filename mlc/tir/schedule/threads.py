"""GPU threads and memory scopes, as the block primitives see them.

On a GPU, the loops bound to ``threadIdx.*`` are not loops: every thread of a thread block
runs their body once. A buffer in ``"shared"`` memory is one per thread block, so a block that
fills it under such a loop must fill it for *all the threads* of the block, not for one
(TVM's rule for cooperative fetching)::

    for bx in thread_binding(8, "blockIdx.x"):
        for tx in thread_binding(128, "threadIdx.x"):
            # compute_at of A_shared here covers A[bx * 128 : bx * 128 + 130],
            # what the 128 threads of block bx read together, not what thread tx reads
            for ax0_0 in range(2):
                for ax0_1 in thread_binding(128, "threadIdx.x"):   # the same threads:
                    A_shared[...] = A[...]                         # a cooperative copy
            C[bx * 128 + tx] = A_shared[...] + ...

:func:`relaxed_thread_loops` says which loops around an attachment point are relaxed that
way for a buffer of a given scope; :func:`check_thread_bindings` refuses the bindings that
would compute an element twice at once or not at all. The storage scopes a program may use
are in :data:`SCOPES`; a target adds its own with :func:`register_scope`.
"""

from __future__ import annotations

from mlc.tir.expr import IntImm, IterKind, Var
from mlc.tir.functor import uses_var
from mlc.tir.schedule import state
from mlc.tir.stmt import BlockRealize, Buffer, For, ForKind, PrimFunc, Stmt

# ---------------------------------------------------------------------------------------------
# storage scopes

RANKS = {"global": 0, "shared": 1, "warp": 2, "local": 3}
"""How widely a buffer of a scope is shared: global by every thread of every block, shared by
the threads of one block, warp by the 32 threads of a warp, local by one thread."""

SCOPES: list[str] = ["global", "shared", "shared.dyn", "local", "warp"]
"""The storage scopes ``cache_read``, ``cache_write`` and ``set_scope`` accept. A tag after a
dot names a special memory with the sharing of its base scope: ``"local.acc_buffer"`` is an
accelerator's accumulator (one per thread, like ``"local"``), ``"global.A_reg"`` a register
file seen by all. Any ``base.tag`` with a base above is accepted; :func:`register_scope`
lists a target's own names so that error messages can suggest them."""


def register_scope(scope: str) -> None:
    """Let programs use the storage scope ``scope`` (a target calls this for its memories,
    e.g. the accelerator's ``"local.inp_buffer"``)."""
    if scope_rank(scope) is None:
        raise ValueError(
            f"storage scope {scope!r} must start with one of {sorted(RANKS)} "
            "(e.g. 'local.acc_buffer'), which says which threads share it"
        )
    if scope not in SCOPES:
        SCOPES.append(scope)


def scope_rank(scope: str) -> int | None:
    """The rank (see :data:`RANKS`) of ``scope``; None when it is not a storage scope."""
    base, dot, tag = scope.partition(".")
    if base not in RANKS or (dot and not tag):
        return None
    return RANKS[base]


# ---------------------------------------------------------------------------------------------
# which loops a buffer's region is relaxed over


def _thread_tag(loop: Stmt) -> str | None:
    if isinstance(loop, For) and loop.kind is ForKind.THREAD_BINDING:
        return loop.thread_binding
    return None


def relaxed_thread_loops(loop_loc: state.Location, scope: str) -> list[For]:
    """The thread-bound loops at or above the loop at ``loop_loc`` whose threads all see one
    copy of a buffer in ``scope``: for ``"shared"`` the ``threadIdx.*`` loops (inside the
    enclosing ``blockIdx`` loops), for ``"warp"`` ``threadIdx.x``, for ``"local"`` and
    ``"global"`` none (a global intermediate computed under threads keeps what each thread
    needs itself, as a te schedule does). A block that computes such a buffer under these
    loops must cover what all their threads need."""
    rank = scope_rank(scope)
    if rank is None or rank in (RANKS["global"], RANKS["local"]):
        return []  # a global buffer keeps each thread's own region, as te does
    loops = [n for n in loop_loc.path if isinstance(n, For)]
    if isinstance(loop_loc.stmt, For):
        loops.append(loop_loc.stmt)
    out = []
    for f in loops:
        tag = _thread_tag(f) or ""
        if rank == RANKS["warp"] and tag != "threadIdx.x":
            continue
        if tag.startswith("threadIdx."):
            out.append(f)
    return out


# ---------------------------------------------------------------------------------------------
# bindings that run an iteration twice at once, or never


def check_thread_bindings(func: PrimFunc) -> tuple[str, dict[Stmt, str]] | None:
    """The first problem with the thread bindings of ``func`` (a message and the statements
    to mark), or None. Refused:

    * a block whose bindings use two nested loops bound to the same thread axis (both are
      the same thread index on a GPU, so most of the iterations never run);
    * a loop bound to a thread axis inside a loop bound to the same axis with a smaller
      extent (the launch has the larger extent; the outer loop's guard skips the rest);
    * a reduction, or a block reading what it writes, under a ``threadIdx`` loop it does not
      use, writing memory the threads share: all of them would update the same elements at
      once.
    """
    blocks: list[state.Location] = []
    for loc in state.walk(func.body):
        node = loc.stmt
        if isinstance(node, For) and node.kind is ForKind.THREAD_BINDING:
            problem = _check_nested_extent(node, loc)
            if problem is not None:
                return problem
        if isinstance(node, BlockRealize) and loc.path:
            blocks.append(loc)
            problem = _check_block(node, loc)
            if problem is not None:
                return problem
    return _check_private_memory(blocks, set(func.params))


def _private_tag(scope: str, tag: str) -> bool:
    """Does each thread of ``tag`` have its own copy of a buffer in ``scope``?"""
    rank = scope_rank(scope)
    if rank is None or rank == RANKS["global"]:
        return False
    if tag.startswith("blockIdx."):
        return True
    if rank == RANKS["warp"]:
        return tag in ("threadIdx.y", "threadIdx.z")
    return rank == RANKS["local"] and tag.startswith("threadIdx.")


def _check_private_memory(
    blocks: list[state.Location], params: set[Buffer]
) -> tuple[str, dict[Stmt, str]] | None:
    """A block that touches a buffer private to each thread (``"local"``) or each thread
    block (``"shared"``) through a loop bound to those threads must have that loop around
    every other block touching the buffer: otherwise a thread writes only its share of
    elements that another one reads, or reads only its share of what it must copy out.
    Only blocks already in one kernel are compared: a te schedule binds the consumer's
    loops before it moves the cache in."""
    users: dict[Buffer, list[state.Location]] = {}
    for loc in blocks:
        block = loc.stmt.block  # type: ignore[attr-defined]
        for r in (*block.reads, *block.writes):
            if scope_rank(r.buffer.scope) is not None and r.buffer not in params:
                lst = users.setdefault(r.buffer, [])
                if all(u is not loc for u in lst):
                    lst.append(loc)
    for buf, locs in users.items():
        if len(locs) < 2:
            continue
        scope, why = buf.scope, ""
        if scope_rank(scope) == RANKS["global"]:
            around = _common_thread_loop(locs)
            if around is None:
                continue  # one copy for all threads: split_host_device checks the exchange
            # lowering allocates it inside that loop, one copy per thread (as te does)
            scope = "local"
            why = (f" (its blocks are all inside {around.loop_var.name!r}, bound to "
                   f"{_thread_tag(around)}, so lowering allocates it there, one copy per "
                   "thread)")
        for loc in locs:
            br: BlockRealize = loc.stmt  # type: ignore[assignment]
            for f in loc.enclosing_loops(stop_at_block=False):
                tag = _thread_tag(f) or ""
                if not _private_tag(scope, tag) or _is_one(f) or not _uses(br, f):
                    continue
                for other in locs:
                    if other is loc or any(p is f for p in other.path):
                        continue
                    if not _same_kernel(loc, other):
                        continue  # not yet in one kernel: a later compute_at may move it
                    name = buf.name
                    ob = other.stmt.block  # type: ignore[attr-defined]
                    return (
                        f"block {br.block.name!r} uses loop {f.loop_var.name!r}, bound to "
                        f"{tag}, to reach {name!r}, a {buf.scope!r} buffer each "
                        f"{tag.split('.')[0]} has its own copy of{why}; block {ob.name!r}, "
                        f"which also uses {name!r}, is outside {f.loop_var.name!r}, so each "
                        f"thread would see only its share of the elements. Use a 'shared' "
                        f"buffer for a cooperative copy, or do not bind this loop",
                        {f: tag, br: f"uses {name}", other.stmt: f"also uses {name}"},
                    )
    return None


def _common_thread_loop(locs: list[state.Location]) -> For | None:
    """The outermost ``threadIdx`` loop around every one of the blocks ``locs``, if any."""
    for p in locs[0].path:
        tag = _thread_tag(p) or ""
        if isinstance(p, For) and tag.startswith("threadIdx.") and not _is_one(p) and all(
            any(q is p for q in loc.path) for loc in locs[1:]
        ):
            return p
    return None


def _same_kernel(a: state.Location, b: state.Location) -> bool:
    """Are the two blocks under one thread-bound loop (so in one GPU kernel)?"""
    return any(_thread_tag(p) is not None and any(p is q for q in b.path) for p in a.path)


def _uses(br: BlockRealize, f: For) -> bool:
    var: Var = f.loop_var
    return any(uses_var(e, lambda v: v is var) for e in (*br.iter_values, br.predicate))


def _check_nested_extent(loop: For, loc: state.Location) -> tuple[str, dict[Stmt, str]] | None:
    tag = loop.thread_binding
    for outer in loc.path:
        if _thread_tag(outer) != tag or not isinstance(outer, For):
            continue
        inner_n, outer_n = loop.extent, outer.extent
        if (
            isinstance(inner_n, IntImm)
            and isinstance(outer_n, IntImm)
            and inner_n.value > outer_n.value
        ):
            return (
                f"loop {loop.loop_var.name!r} is bound to {tag} with {inner_n.value} threads "
                f"inside loop {outer.loop_var.name!r}, bound to {tag} with {outer_n.value}: "
                f"both are the same {tag}, so iterations {outer_n.value}.."
                f"{inner_n.value - 1} of {loop.loop_var.name!r} would never run. Split "
                f"{loop.loop_var.name!r} by {outer_n.value} and bind the inner part "
                f"instead, e.g. sch.split(loop, factors=[None, {outer_n.value}])",
                {outer: f"{tag} x {outer_n.value}", loop: f"{tag} x {inner_n.value}"},
            )
    return None


def _check_block(br: BlockRealize, loc: state.Location) -> tuple[str, dict[Stmt, str]] | None:
    block = br.block
    loops = loc.enclosing_loops(stop_at_block=False)

    def used(f: For) -> bool:
        var: Var = f.loop_var
        exprs = [*br.iter_values, br.predicate]
        return any(uses_var(e, lambda v: v is var) for e in exprs)

    by_tag: dict[str, For] = {}
    for f in loops:
        tag = _thread_tag(f)
        if tag is None or tag.startswith("vthread") or _is_one(f) or not used(f):
            continue
        if tag in by_tag:
            first = by_tag[tag]
            return (
                f"block {block.name!r} uses both {first.loop_var.name!r} and "
                f"{f.loop_var.name!r}, which are bound to the same {tag}: on a GPU they are "
                f"one thread index, so most of the iterations of {block.name!r} would never "
                f"run. Bind only one of them to {tag} (if {block.name!r} is a cache moved "
                "under a thread loop with compute_at, move it to a loop whose region covers "
                "all threads, or use a 'shared' cache, whose region compute_at widens to the "
                "whole thread block)",
                {first: tag, f: tag, br: "uses both"},
            )
        by_tag[tag] = f
    writes_shared = any(
        (scope_rank(w.buffer.scope) or 0) < RANKS["local"] for w in block.writes
    )
    if not writes_shared:
        return None
    reduces = any(iv.kind is not IterKind.SPATIAL for iv in block.iter_vars) or bool(
        {r.buffer for r in block.reads} & {w.buffer for w in block.writes}
    )
    if not reduces:
        return None
    for f in loops:
        tag = _thread_tag(f) or ""
        if tag.startswith("threadIdx.") and not _is_one(f) and not used(f):
            return (
                f"block {block.name!r} updates {block.writes[0].buffer.name!r} (a reduction) "
                f"under loop {f.loop_var.name!r}, bound to {tag}, without using it: every "
                f"thread would update the same elements at once. Bind a loop that "
                f"{block.name!r} uses, move it out of {f.loop_var.name!r}, or keep its "
                "buffer 'local'",
                {f: tag, br: "does not use it"},
            )
    return None


def _is_one(f: For) -> bool:
    return isinstance(f.extent, IntImm) and f.extent.value == 1
