"""An event-driven simulator of the VDLA machine: exact numbers and exact cycle counts.

``simulate(program, dram, config)`` runs in four steps:

1. **Check** (:func:`mlc.vdla.verify.analyze`): fields, buffer and DRAM ranges, micro-op
   slots. Nothing has run yet when an error is raised.
2. **Schedule**: the load, compute and store modules each take their own command queue in
   program order and run at the same time. An instruction starts when its module is free
   *and* the tokens it pops are there; it ends ``cost`` cycles later and then pushes its
   tokens, stamped with its end time. Tokens are FIFO per queue (LD->EX, EX->LD, EX->ST,
   ST->EX), so the k-th POP on a queue takes the k-th PUSH. If no module can go on while
   instructions remain, that is a **deadlock** (a POP that can never be satisfied); a token
   left over at the end is one too (a PUSH whose POP is missing). Both raise
   :class:`~mlc.errors.VDLADeadlockError` naming the instruction.
3. **Race check**: two modules touching overlapping tiles of a buffer during overlapping
   cycles, one of them writing, is a missing dependency: :class:`~mlc.errors.VDLARaceError`.
4. **Execute**: instructions take effect in the order they *start* in the schedule (ties by
   index), so a program with too few tokens computes what the hardware would, wrong numbers
   included.

Arithmetic: inputs and weights are int8, accumulators int32. A GEMM adds
``sum_i inp[b, i] * wgt[o, i]`` to each accumulator with two's complement wraparound modulo
2**32, like the hardware's adders (numpy computes the products exactly, then wraps). ALU
ADD and MUL wrap the same way; SHR is an arithmetic shift (tile-operand shift amounts are
clipped to 0..31); a STORE of int8 keeps the low 8 bits.

Costs: see :class:`~mlc.vdla.config.VDLAConfig` (DMA: latency + bytes / bandwidth; GEMM
and ALU: cycles per micro-op times the loop's trip count; one cycle at least).
"""

from __future__ import annotations

import contextlib
from collections import deque
from dataclasses import dataclass, field

from mlc.errors import VDLADeadlockError, VDLAProgramError, VDLARaceError
from mlc.vdla.config import DEFAULT, MemScope, VDLAConfig
from mlc.vdla.deps import check_dependencies
from mlc.vdla.dram import DRAM
from mlc.vdla.execute import Machine
from mlc.vdla.isa import Gemm, Instruction, Load, Module, Opcode, Program, Store
from mlc.vdla.verify import Info, analyze, where

MODULES = (Module.LOAD, Module.COMPUTE, Module.STORE)


@dataclass(frozen=True)
class Event:
    """One instruction on the timeline: ``[start, end)`` cycles on ``module``."""

    index: int
    module: Module
    start: int
    end: int
    opcode: Opcode
    tid: int | None


@dataclass(frozen=True)
class TokenEvent:
    """A token pushed by ``push_index`` at cycle ``push_time`` (its end) and popped by
    ``pop_index``, which started at ``pop_time``."""

    src: Module
    dst: Module
    push_index: int
    pop_index: int
    push_time: int
    pop_time: int

    @property
    def queue(self) -> str:
        return f"{self.src.value}->{self.dst.value}"


@dataclass(frozen=True)
class Stats:
    """What a run measured. ``utilization`` is the fraction of cycles the GEMM core does
    useful multiply-adds (the paper's "compute utilization")."""

    cycles: int
    busy: dict[Module, int]
    bytes_loaded: int
    bytes_stored: int
    gemm_cycles: int
    alu_cycles: int
    macs: int
    timeline: tuple[Event, ...] = field(repr=False)
    tokens: tuple[TokenEvent, ...] = field(repr=False)
    config: VDLAConfig = field(repr=False, default=DEFAULT)

    @property
    def utilization(self) -> float:
        return self.gemm_cycles / self.cycles if self.cycles else 0.0

    @property
    def ops_per_cycle(self) -> float:
        """Integer operations per cycle achieved (a multiply-add is two)."""
        return 2.0 * self.macs / self.cycles if self.cycles else 0.0

    @property
    def intensity(self) -> float:
        """Operations per DRAM byte moved (the roofline's x axis)."""
        moved = self.bytes_loaded + self.bytes_stored
        return 2.0 * self.macs / moved if moved else float("inf")

    def __str__(self) -> str:
        rows = [f"cycles               {self.cycles:>12,}",
                f"compute utilization  {self.utilization:>12.1%}"]
        for m in MODULES:
            share = self.busy[m] / self.cycles if self.cycles else 0.0
            rows.append(f"busy {m.name.lower():<15} {self.busy[m]:>12,}  ({share:.0%})")
        rows += [f"bytes loaded         {self.bytes_loaded:>12,}",
                 f"bytes stored         {self.bytes_stored:>12,}",
                 f"multiply-adds        {self.macs:>12,}",
                 f"instructions         {len(self.timeline):>12,}"]
        return "\n".join(rows)


def _queue_name(src: Module, dst: Module) -> str:
    return f"{src.value}->{dst.value}"


def _pops(ins: Instruction) -> list[Module]:
    me = ins.module
    out = []
    if ins.pop_prev and me.prev is not None:
        out.append(me.prev)
    if ins.pop_next and me.next is not None:
        out.append(me.next)
    return out


def _pushes(ins: Instruction) -> list[Module]:
    me = ins.module
    out = []
    if ins.push_prev and me.prev is not None:
        out.append(me.prev)
    if ins.push_next and me.next is not None:
        out.append(me.next)
    return out


def schedule(program: Program, infos: list[Info]) -> tuple[list[Event], list[TokenEvent]]:
    """Start and end cycles of every instruction (step 2 of the module docstring)."""
    instrs = program.instructions
    queues: dict[Module, list[int]] = {m: [] for m in MODULES}
    for info in infos:
        queues[info.module].append(info.index)
    tokens: dict[tuple[Module, Module], deque[tuple[int, int]]] = {
        (a, b): deque() for a in MODULES for b in MODULES}
    pos = {m: 0 for m in MODULES}
    free = {m: 0 for m in MODULES}
    events: list[Event | None] = [None] * len(instrs)
    token_events: list[TokenEvent] = []
    progressed = True
    while progressed:
        progressed = False
        for m in MODULES:
            while pos[m] < len(queues[m]):
                index = queues[m][pos[m]]
                ins = instrs[index]
                sources = _pops(ins)
                if any(not tokens[(src, m)] for src in sources):
                    break
                start = free[m]
                taken = [(src, *tokens[(src, m)].popleft()) for src in sources]
                for _, t, _ in taken:
                    start = max(start, t)
                end = start + infos[index].cycles
                for src, t, pusher in taken:
                    token_events.append(TokenEvent(src, m, pusher, index, t, start))
                for dst in _pushes(ins):
                    tokens[(m, dst)].append((end, index))
                free[m] = end
                events[index] = Event(index, m, start, end, ins.opcode, ins.tid)
                pos[m] += 1
                progressed = True
    stuck = [m for m in MODULES if pos[m] < len(queues[m])]
    if stuck:
        raise VDLADeadlockError(_deadlock_message(program, queues, pos, tokens, stuck))
    for (src, dst), left in tokens.items():
        if left:
            _, pusher = left[0]
            raise VDLADeadlockError(
                f"deadlock: {where(pusher, instrs[pusher], program)} pushes a token on "
                f"{_queue_name(src, dst)} that no instruction pops ({len(left)} left over). "
                f"A POP is missing: the {dst.name.lower()} instruction that must wait for it "
                f"needs pop_{'prev' if dst.prev is src else 'next'}=True (or drop the push).")
    done = [e for e in events if e is not None]
    return done, token_events


def _deadlock_message(program: Program, queues: dict[Module, list[int]],
                      pos: dict[Module, int], tokens: dict[tuple[Module, Module], deque],
                      stuck: list[Module]) -> str:
    instrs = program.instructions
    lines = []
    first = None
    for m in stuck:
        index = queues[m][pos[m]]
        ins = instrs[index]
        for src in _pops(ins):
            if tokens[(src, m)]:
                continue
            later = sum(1 for j in queues[src][pos[src]:] if m in _pushes(instrs[j]))
            why = (f"{later} PUSH(es) of it are still queued behind a stuck "
                   f"{src.name.lower()} module" if later else
                   "no instruction left in the program pushes it")
            lines.append(f"  {m.value} waits at {where(index, ins, program)} for a token on "
                         f"{_queue_name(src, m)}: {why}")
            if first is None and not later:
                first = (index, ins, src, m)
    if first is None:
        index = queues[stuck[0]][pos[stuck[0]]]
        head = (f"deadlock at {where(index, instrs[index], program)}: the modules wait for "
                "each other in a cycle")
    else:
        index, ins, src, m = first
        head = (f"deadlock: the POP ({_queue_name(src, m)}) of "
                f"{where(index, ins, program)} can never be satisfied; a PUSH is missing "
                f"on the {src.name.lower()} side")
    return head + "\n" + "\n".join(lines)


def check_races(program: Program, infos: list[Info], events: list[Event]) -> None:
    """Raise :class:`VDLARaceError` if two modules touch overlapping tiles of a buffer at
    overlapping times and one of them writes (step 3 of the module docstring)."""
    by_scope: dict[MemScope, list[tuple[int, int, int, int, bool, Module, int]]] = {}
    for event in events:
        for a in infos[event.index].accesses:
            by_scope.setdefault(a.scope, []).append(
                (event.start, event.end, a.lo, a.hi, a.write, event.module, event.index))
    for scope, accesses in by_scope.items():
        accesses.sort()
        active: list[tuple[int, int, int, int, bool, Module, int]] = []
        for acc in accesses:
            start, end, lo, hi, write, module, index = acc
            active = [b for b in active if b[1] > start]
            for b in active:
                if (b[5] is not module and (write or b[4]) and b[2] < hi and lo < b[3]):
                    first, second = sorted((b, acc), key=lambda t: t[6])
                    raise VDLARaceError(
                        f"race on {scope.label}: {_during(program, first)} and "
                        f"{_during(program, second)} touch tiles [{max(lo, b[2])}, "
                        f"{min(hi, b[3])}) at the same time and one of them writes. Add a "
                        "dependency token between them (push after the first, pop before "
                        "the second).")
            active.append(acc)


def _during(program: Program, access: tuple[int, int, int, int, bool, Module, int]) -> str:
    start, end, _, _, _, module, index = access
    return (f"{where(index, program.instructions[index], program)} "
            f"({module.name.lower()}, cycles {start}-{end})")


def simulate(program: Program, dram: DRAM, config: VDLAConfig = DEFAULT) -> Stats:
    """Run ``program`` on a fresh machine with ``dram`` (which receives the results) and
    return the :class:`Stats`. See the module docstring for the steps and the errors."""
    if not isinstance(dram, DRAM):  # analyze takes None (no DRAM checks); running does not
        raise VDLAProgramError(f"simulate needs a vdla.DRAM() holding the program's tensors, "
                               f"got {type(dram).__name__}")
    infos = analyze(program, config, dram)
    events, token_events = schedule(program, infos)
    check_dependencies(program, infos)  # every missing token, whatever the timing
    check_races(program, infos, events)
    machine = Machine(config, dram)
    with _one_blas_thread():
        for event in sorted(events, key=lambda e: (e.start, e.index)):
            machine.run(program.instructions[event.index], infos[event.index])
    busy = {m: 0 for m in MODULES}
    for event in events:
        busy[event.module] += event.end - event.start
    gemm_trips = sum(infos[e.index].trips for e in events
                     if e.opcode is Opcode.GEMM and not _is_reset(program.instructions[e.index]))
    alu_trips = sum(infos[e.index].trips for e in events if e.opcode is Opcode.ALU)
    loaded = sum(i.dram_bytes for i, ins in zip(infos, program.instructions)
                 if isinstance(ins, Load))
    stored = sum(i.dram_bytes for i, ins in zip(infos, program.instructions)
                 if isinstance(ins, Store))
    return Stats(
        cycles=max((e.end for e in events), default=0),
        busy=busy,
        bytes_loaded=loaded,
        bytes_stored=stored,
        gemm_cycles=gemm_trips * config.gemm_cycles_per_uop,
        alu_cycles=alu_trips * config.alu_cycles_per_uop,
        macs=gemm_trips * config.macs_per_uop,
        timeline=tuple(events),
        tokens=tuple(token_events),
        config=config,
    )


def _one_blas_thread() -> contextlib.AbstractContextManager[object]:
    """The tile products are small: BLAS threads cost more than they give (100x on a
    busy machine), so run them on one thread when threadpoolctl is there to ask."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def _is_reset(ins: Instruction) -> bool:
    return isinstance(ins, Gemm) and ins.reset


__all__ = ["Event", "Stats", "TokenEvent", "check_races", "schedule", "simulate"]
