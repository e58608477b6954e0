"""Insert the dependency tokens a program needs: TVM's ``InjectCoProcSync`` for VDLA.

Writing PUSH/POP flags by hand is where accelerator programs go wrong (too few: races; one
too many: deadlock). This pass derives them from what each instruction touches::

    program = insert_dependencies(Program(tokenless_instructions, uops))

Walk the instructions in program order. For each instruction ``c`` on module ``B``, find
the latest earlier instruction ``p`` on a *neighbouring* module ``A`` that conflicts with it
(overlapping tiles of the same buffer, at least one of the two writing: read-after-write,
write-after-read or write-after-write). If ``B`` has not already waited for ``p`` or
something after it on ``A``, set the push flag towards ``B`` on ``p`` and the pop flag from
``A`` on ``c``. A FINISH waits for the last instruction of each neighbour.

Why this is right: the pushes on a queue are created at increasing positions of ``A``'s
command queue and the pops at increasing positions of ``B``'s, one each, so the k-th pop
meets the k-th push, exactly the FIFO pairing of the hardware's token queues. Waiting for
``p`` covers everything before ``p`` on ``A`` (modules run in order), so the pass adds only
the tokens it needs. It cannot deadlock: every pop waits for an instruction earlier in
program order, so the earliest unfinished instruction can always run.

Why it hides latency: ``p`` is the instruction that really conflicts, not simply the last
one on ``A``. With two virtual threads using different halves of the buffers, the load for
thread 0's next step waits only for thread 0's GEMM, so it runs while thread 1 computes.

Load and store share no on-chip buffer, so their DRAM traffic is not ordered by this pass;
a program that stores a tensor and loads it again must route a token through compute.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from typing import Any

from mlc.errors import VDLAProgramError, VDLARaceError
from mlc.vdla.config import DEFAULT, MemScope, VDLAConfig
from mlc.vdla.isa import Finish, Instruction, Module, Program
from mlc.vdla.verify import analyze, where


def insert_dependencies(program: Program, config: VDLAConfig = DEFAULT) -> Program:
    """``program`` with its dependency flags recomputed (existing flags are dropped)."""
    if not isinstance(program, Program):
        raise VDLAProgramError(f"insert_dependencies expects a vdla Program, got "
                               f"{type(program).__name__}")
    instrs = [dataclasses.replace(ins, pop_prev=False, pop_next=False, push_prev=False,
                                  push_next=False) for ins in program.instructions]
    infos = analyze(Program(tuple(instrs), program.uops), config)
    position: list[int] = []
    count = {m: 0 for m in Module}
    for ins in instrs:
        position.append(count[ins.module])
        count[ins.module] += 1
    # covered[(A, B)]: the last position of A's queue that B has waited for
    covered: dict[tuple[Module, Module], int] = {}
    # history[(scope, module)]: earlier accesses, as (position, index, lo, hi, write)
    history: dict[tuple[MemScope, Module], list[tuple[int, int, int, int, bool]]] = {}
    last_index: dict[Module, int] = {}
    flags: list[dict[str, bool]] = [{} for _ in instrs]
    for c, ins in enumerate(instrs):
        me = ins.module
        neighbours = [m for m in (me.prev, me.next) if m is not None]
        need: dict[Module, int] = {}
        if isinstance(ins, Finish):
            need = {m: last_index[m] for m in neighbours if m in last_index}
        for access in infos[c].accesses:
            for other in neighbours:
                seen = covered.get((other, me), -1)
                for pos, p, lo, hi, write in reversed(history.get((access.scope, other), [])):
                    if pos <= seen or p <= need.get(other, -1):
                        break
                    if (write or access.write) and lo < access.hi and access.lo < hi:
                        need[other] = p
                        break
        for other, p in need.items():
            if position[p] <= covered.get((other, me), -1):
                continue
            producer = instrs[p].module
            flags[p]["push_next" if producer.next is me else "push_prev"] = True
            flags[c]["pop_prev" if me.prev is other else "pop_next"] = True
            covered[(other, me)] = position[p]
        for access in infos[c].accesses:
            history.setdefault((access.scope, me), []).append(
                (position[c], c, access.lo, access.hi, access.write))
        last_index[me] = c
    out: list[Instruction] = [dataclasses.replace(ins, **f) if f else ins
                              for ins, f in zip(instrs, flags)]
    return Program(tuple(out), program.uops)


def check_dependencies(program: Program, infos: list[Any]) -> None:
    """Raise :class:`VDLARaceError`, before anything runs, when two instructions of
    different modules touch overlapping tiles of one buffer (one of them writing) and no
    chain of dependency tokens orders them, whether or not they would overlap in time in
    this simulation (they may on hardware, or with other latencies).

    What orders ``i`` before ``j``: ``i`` comes first on its own module's queue, or a token
    ``i`` (or something after it on its queue) pushes is popped by ``j`` (or by something
    before ``j`` on its queue), or a chain of such steps. Each instruction carries a vector
    clock: for every module, the last position of that module's queue known to finish
    before it starts. A token pairs the k-th push on a queue with its k-th pop (FIFO).
    Programs that deadlock are left to :func:`mlc.vdla.simulator.schedule` to report."""
    instrs = program.instructions
    queues: dict[Module, list[int]] = {m: [] for m in Module}
    position: list[int] = [0] * len(instrs)
    for k, ins in enumerate(instrs):
        position[k] = len(queues[ins.module])
        queues[ins.module].append(k)
    tokens: dict[tuple[Module, Module], deque[int]] = {}
    clock: list[dict[Module, int] | None] = [None] * len(instrs)
    pos = {m: 0 for m in Module}
    last: dict[Module, dict[Module, int]] = {m: {} for m in Module}
    started: list[int] = []  # an order in which every instruction follows what it waits for
    progressed = True
    while progressed:
        progressed = False
        for m in Module:
            while pos[m] < len(queues[m]):
                k = queues[m][pos[m]]
                ins = instrs[k]
                sources = [s for s, flag in ((m.prev, ins.pop_prev), (m.next, ins.pop_next))
                           if flag and s is not None]
                if any(not tokens.get((s, m)) for s in sources):
                    break
                vc = dict(last[m])
                for s in sources:
                    p = tokens[(s, m)].popleft()
                    for mod, at in (clock[p] or {}).items():
                        vc[mod] = max(vc.get(mod, -1), at)
                    vc[s] = max(vc.get(s, -1), position[p])
                clock[k] = vc
                for d, flag in ((m.prev, ins.push_prev), (m.next, ins.push_next)):
                    if flag and d is not None:
                        tokens.setdefault((m, d), deque()).append(k)
                last[m] = {**vc, m: position[k]}
                started.append(k)
                pos[m] += 1
                progressed = True
    if any(pos[m] < len(queues[m]) for m in Module):
        return  # a deadlock: schedule() names it
    history: dict[tuple[MemScope, Module], list[tuple[int, int, int, int, bool]]] = {}
    # visited in ``started`` order, not the program's: the queues, not where an instruction
    # stands in the list, order the modules (a STORE listed before the GEMM it waits for is
    # fine); in this order whatever may precede ``j`` is in ``history`` when ``j`` is judged
    for j in started:
        info = infos[j]
        me = info.module
        vc = clock[j] or {}
        for access in info.accesses:
            for other in Module:
                if other is me:
                    continue
                done = vc.get(other, -1)
                for pos_i, i, lo, hi, write in reversed(history.get((access.scope, other), [])):
                    if pos_i <= done:
                        break
                    if (write or access.write) and lo < access.hi and access.lo < hi:
                        a, b = sorted((i, j))  # named as listed: the token goes a -> b
                        ma, mb = instrs[a].module, instrs[b].module
                        raise VDLARaceError(
                            f"race on {access.scope.label}: {where(a, instrs[a], program)} "
                            f"and {where(b, instrs[b], program)} touch tiles "
                            f"[{max(lo, access.lo)}, {min(hi, access.hi)}) and one of them "
                            "writes, but no dependency token orders them, so they may run "
                            "at the same time (found before running, whatever the timing). "
                            f"Add a token: push_{_side(ma, mb)}=True on the first and "
                            f"pop_{_side(mb, ma)}=True on the second, or let "
                            "vdla.insert_dependencies place the tokens")
        for access in info.accesses:
            history.setdefault((access.scope, me), []).append(
                (position[j], j, access.lo, access.hi, access.write))


def _side(me: Module, other: Module) -> str:
    return "next" if me.next is other else "prev"
