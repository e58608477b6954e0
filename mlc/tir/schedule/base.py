"""The Schedule's state: the current PrimFunc, handles, the trace, and lookups.

The primitives themselves live in mixin modules (``loops.py``, ``sampling.py``,
``compute_location.py``, ``cache.py``, ``reduction.py``); each one reads ``self.mod``,
builds the new program, checks it keeps the meaning, and calls ``self._update``.
"""

from __future__ import annotations

import random
from typing import Any

from mlc.errors import ScheduleError
from mlc.tir.expr import Var
from mlc.tir.schedule import state
from mlc.tir.schedule.trace import BlockRV, Instruction, LoopRV, SampledInt, Trace
from mlc.tir.stmt import Block, BlockRealize, Buffer, For, PrimFunc, Stmt


class ScheduleBase:
    """State shared by every primitive. Users construct :class:`mlc.tir.Schedule`."""

    def __init__(self, func: Any, seed: int | None = None) -> None:
        self._module: Any = None  # the IRModule it came from (mlc.script), if any
        self._func_name = ""
        if not isinstance(func, PrimFunc) and callable(getattr(func, "prim_funcs", None)):
            self._module = func
            self._func_name, func = _only_prim_func(func)
        if not isinstance(func, PrimFunc):
            raise ScheduleError(
                f"tir.Schedule needs a PrimFunc (e.g. te.create_prim_func([A, B, C])) or an "
                f"IRModule holding one (@ir_module), got {type(func).__name__}"
            )
        self._func = func
        self._orig = func
        self._blocks: dict[BlockRV, str] = {}
        self._loops: dict[LoopRV, Var] = {}
        self._counter = 0
        self.trace = Trace()
        self.seed = seed
        self._rng = random.Random(seed)

    # ----------------------------------------------------------------------------------------
    # the program

    @property
    def mod(self) -> Any:
        """The current PrimFunc (prints as code); for a schedule of an IRModule, as in TVM,
        the module with the scheduled function in place (``sch.mod["mm_relu"]``)."""
        if self._module is not None:
            return self._module.with_function(self._func_name, self._func)
        return self._func

    @property
    def func(self) -> PrimFunc:
        return self._func

    def show(self) -> None:
        """Print the current program."""
        print(self._func)

    def _repr_html_(self) -> str:
        from mlc.tir.printer_html import to_html

        return to_html(self._func)

    def __repr__(self) -> str:
        return repr(self._func)

    def copy(self) -> Any:
        """An independent Schedule at the same point, with the same trace so far."""
        other = type(self).__new__(type(self))
        other.__dict__.update(self.__dict__)
        other._blocks = dict(self._blocks)
        other._loops = dict(self._loops)
        other.trace = Trace(list(self.trace.insts))
        other._rng = random.Random()
        other._rng.setstate(self._rng.getstate())
        return other

    def _update(self, func: PrimFunc) -> None:
        self._func = func

    def _update_checking_threads(self, func: PrimFunc, what: str) -> None:
        """``_update``, unless the new program binds threads so that some iteration would run
        twice at once or never (see :func:`mlc.tir.schedule.threads.check_thread_bindings`)."""
        from mlc.tir.schedule.threads import check_thread_bindings

        problem = check_thread_bindings(func)
        if problem is not None:
            message, marks = problem
            old, self._func = self._func, func
            try:
                err = self._error(f"{what}: {message}", marks)
            finally:
                self._func = old
            raise err
        self._update(func)

    # ----------------------------------------------------------------------------------------
    # handles

    def _new_id(self, prefix: str) -> str:
        rv_id = f"{prefix}{self._counter}"
        self._counter += 1
        return rv_id

    def _block_rv(self, name: str) -> BlockRV:
        rv = BlockRV(self._new_id("b"))
        self._blocks[rv] = name
        return rv

    def _loop_rv(self, var: Var) -> LoopRV:
        rv = LoopRV(self._new_id("l"))
        self._loops[rv] = var
        return rv

    def _sampled(self, value: int) -> SampledInt:
        return SampledInt(value, self._new_id("v"))

    def _rename_block(self, rv: BlockRV, name: str) -> None:
        self._blocks[rv] = name

    def _rebind_loop(self, rv: LoopRV, var: Var) -> None:
        self._loops[rv] = var

    def _block_name(self, rv: BlockRV | str) -> str:
        if isinstance(rv, str):
            return rv
        if not isinstance(rv, BlockRV) or rv not in self._blocks:
            raise ScheduleError(f"{rv!r} is not a block handle of this schedule (use get_block)")
        return self._blocks[rv]

    def _get_block(self, rv: BlockRV | str) -> state.Location:
        """The BlockRealize of a block handle, with its path."""
        name = self._block_name(rv)
        loc = state.find_block(self._func, name)
        if loc is None:
            raise ScheduleError(
                f"block {name!r} is no longer in the program (it was inlined or removed)\n"
                + str(self._func)
            )
        return loc

    def _get_loop(self, rv: LoopRV) -> state.Location:
        if not isinstance(rv, LoopRV) or rv not in self._loops:
            raise ScheduleError(
                f"{rv!r} is not a loop handle of this schedule (use get_loops(block))"
            )
        var = self._loops[rv]
        loc = state.find_loop(self._func, var)
        if loc is None:
            raise ScheduleError(
                f"loop {var.name!r} is no longer in the program: a primitive replaced it "
                "(fuse, split, compute_at...). Use the handles that primitive returned, or "
                "call get_loops again.\n" + str(self._func)
            )
        return loc

    def _loop_var(self, rv: LoopRV) -> Var:
        return self._get_loop(rv).stmt.loop_var  # type: ignore[attr-defined]

    def _handle_of_loop(self, var: Var) -> LoopRV:
        for rv, v in self._loops.items():
            if v is var:
                return rv
        return self._loop_rv(var)

    def _handle_of_block(self, name: str) -> BlockRV:
        for rv, n in self._blocks.items():
            if n == name:
                return rv
        return self._block_rv(name)

    def _fresh(self, base: str) -> str:
        return state.fresh_name(base, state.names_in_use(self._func))

    # ----------------------------------------------------------------------------------------
    # the trace

    def _record(self, kind: str, inputs: dict[str, Any], outputs: Any) -> None:
        self.trace.insts.append(
            Instruction(kind, {k: _encode(v) for k, v in inputs.items()}, _ids(outputs))
        )

    # ----------------------------------------------------------------------------------------
    # errors

    def _error(self, message: str, culprit: Stmt | dict[Stmt, str] | None = None) -> ScheduleError:
        """A ScheduleError whose message ends with the program, the culprit line marked."""
        from mlc.tir.printer import to_str

        try:
            code = to_str(self._func, mark=culprit)
        except Exception:  # the printer must never hide the real error
            code = "<program could not be printed>"
        return ScheduleError(f"{message}{_opaque_note(culprit)}\n\n{code}")

    # ----------------------------------------------------------------------------------------
    # lookups (recorded: they define handles)

    def get_block(self, name: str, func_name: str | None = None) -> BlockRV:
        """The block called ``name`` (te.compute's ``name=``). ``func_name`` (TVM's, for
        modules of several functions) must name this schedule's function when given."""
        if func_name is not None and func_name not in (self._func.name, "main"):
            raise self._error(
                f"get_block({name!r}, func_name={func_name!r}): this schedule has one "
                f"function, {self._func.name!r}"
            )
        if state.find_block(self._func, name) is None:
            names = [loc.stmt.block.name for loc in state.all_blocks(self._func)]  # type: ignore[attr-defined]
            raise self._error(f"there is no block named {name!r}; the blocks are {names}")
        rv = self._handle_of_block(name)
        self._record("get_block", {"name": name}, rv)
        return rv

    def get_loops(self, block: BlockRV) -> list[LoopRV]:
        """The loops around ``block``, outermost first (stopping at the enclosing block)."""
        loc = self._get_block(block)
        rvs = [self._handle_of_loop(f.loop_var) for f in loc.enclosing_loops()]
        self._record("get_loops", {"block": block}, rvs)
        return rvs

    def get_child_blocks(self, block_or_loop: BlockRV | LoopRV) -> list[BlockRV]:
        """The blocks directly under a block or a loop, in program order."""
        if isinstance(block_or_loop, LoopRV):
            node: Stmt = self._get_loop(block_or_loop).stmt
        else:
            node = self._get_block(block_or_loop).stmt
        rvs = [self._handle_of_block(br.block.name) for br in state.child_block_realizes(node)]
        self._record("get_child_blocks", {"block_or_loop": block_or_loop}, rvs)
        return rvs

    def get_producers(self, block: BlockRV) -> list[BlockRV]:
        """The blocks (in the same scope) that write a buffer ``block`` reads."""
        rvs = [self._handle_of_block(b.name) for b in self._neighbours(block, producers=True)]
        self._record("get_producers", {"block": block}, rvs)
        return rvs

    def get_consumers(self, block: BlockRV) -> list[BlockRV]:
        """The blocks (in the same scope) that read a buffer ``block`` writes."""
        rvs = [self._handle_of_block(b.name) for b in self._neighbours(block, producers=False)]
        self._record("get_consumers", {"block": block}, rvs)
        return rvs

    def _neighbours(self, block: BlockRV, producers: bool) -> list[Block]:
        me = self._get_block(block).stmt.block  # type: ignore[attr-defined]
        mine = {r.buffer for r in (me.reads if producers else me.writes)}
        out = []
        for loc in state.all_blocks(self._func):
            other: Block = loc.stmt.block  # type: ignore[attr-defined]
            if other is me:
                continue
            theirs = {r.buffer for r in (other.writes if producers else other.reads)}
            if mine & theirs:
                out.append(other)
        return out

    def get(self, rv: BlockRV | LoopRV) -> Block | For:
        """The IR node a handle names now: the Block, or the For loop (read its ``extent``,
        ``kind``, ``loop_var``)."""
        if isinstance(rv, LoopRV):
            return self._get_loop(rv).stmt  # type: ignore[return-value]
        return self._get_block(rv).stmt.block  # type: ignore[attr-defined,no-any-return]

    # small helpers shared by primitives
    def _block_of(self, block: BlockRV) -> tuple[BlockRealize, state.Location]:
        loc = self._get_block(block)
        return loc.stmt, loc  # type: ignore[return-value]

    def _loop_of(self, loop: LoopRV) -> tuple[For, state.Location]:
        loc = self._get_loop(loop)
        return loc.stmt, loc  # type: ignore[return-value]

    def _buffer_by_name(self, name: str) -> Buffer:
        for buf in self._func.params:
            if buf.name == name:
                return buf
        for loc in state.walk(self._func.body):
            if isinstance(loc.stmt, Block):
                for buf in loc.stmt.alloc_buffers:
                    if buf.name == name:
                        return buf
        raise ScheduleError(f"there is no buffer named {name!r}")


def _encode(value: Any) -> Any:
    if isinstance(value, (BlockRV, LoopRV, SampledInt)):
        return "$" + value.rv_id
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    if isinstance(value, Buffer):
        return value.name
    return value


def _ids(outputs: Any) -> list[str]:
    if outputs is None:
        return []
    if isinstance(outputs, (list, tuple)):
        out: list[str] = []
        for o in outputs:
            out.extend(_ids(o))
        return out
    return [outputs.rv_id]


def _only_prim_func(mod: Any) -> tuple[str, PrimFunc]:
    """The one PrimFunc of an IRModule (name, function); a ScheduleError if it has several."""
    funcs = mod.prim_funcs()
    if len(funcs) != 1:
        names = ", ".join(repr(n) for n in funcs) or "none"
        first = next(iter(funcs), "main")
        raise ScheduleError(
            f"tir.Schedule(mod): mlc schedules one function at a time and this module has "
            f"{len(funcs)} PrimFuncs ({names}); schedule one of them: "
            f"tir.Schedule(mod[{first!r}])"
        )
    name, func = next(iter(funcs.items()))
    return name, func


def _opaque_note(culprit: Any) -> str:
    """A te.extern block (annotated ``extern``) has no loops or expression to work on."""
    for stmt in list(culprit) if isinstance(culprit, dict) else [culprit]:
        block = getattr(stmt, "block", stmt)
        what = dict(getattr(block, "annotations", ())).get("extern")
        if what:
            return (f". Block {block.name!r} is opaque (an extern call: {what}); schedule the "
                    "blocks around it instead")
    return ""
