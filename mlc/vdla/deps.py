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

from mlc.errors import VDLAProgramError
from mlc.vdla.config import DEFAULT, MemScope, VDLAConfig
from mlc.vdla.isa import Finish, Instruction, Module, Program
from mlc.vdla.verify import analyze


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
