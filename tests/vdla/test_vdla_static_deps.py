"""Dependency tokens checked before running (issue 26). The race check was dynamic only:
of 62 EX->LD tokens dropped one at a time from compiled programs, 55 passed because the
overlap did not happen in that simulation. Now every missing dependency is a
VDLARaceError naming the two instructions, found from the instruction stream's reads and
writes, whatever the timing."""

from __future__ import annotations

import dataclasses

import pytest

import mlc
from mlc.errors import VDLARaceError
from mlc.vdla import Module, Program, insert_dependencies, schedules
from mlc.vdla.config import DEFAULT
from mlc.vdla.deps import check_dependencies
from mlc.vdla.verify import analyze


def _compiled(m: int, n: int, k: int, block: int, kblock: int, threads: int) -> Program:
    s, args = schedules.gemm_schedule(m, n, k, block, kblock, threads, True)
    return mlc.build(s, args, target="vdla").program


def _drop(program: Program, k: int) -> Program:
    """``program`` without its k-th EX->LD token (the k-th push_prev of compute and the
    k-th pop_next of load, which the FIFO pairs)."""
    instrs = list(program.instructions)
    pushes = [i for i, ins in enumerate(instrs) if ins.module is Module.COMPUTE and ins.push_prev]
    pops = [i for i, ins in enumerate(instrs) if ins.module is Module.LOAD and ins.pop_next]
    assert len(pushes) == len(pops)
    instrs[pushes[k]] = dataclasses.replace(instrs[pushes[k]], push_prev=False)
    instrs[pops[k]] = dataclasses.replace(instrs[pops[k]], pop_next=False)
    return Program(tuple(instrs), program.uops)


def _tokens(program: Program) -> int:
    return sum(1 for ins in program.instructions
               if ins.module is Module.COMPUTE and ins.push_prev)


@pytest.mark.parametrize("shape, block, kblock, threads", [
    ((32, 32, 32), 16, 8, 1),
    ((64, 32, 32), 16, 16, 2),
    ((32, 24, 40), 8, 8, 1),
])
def test_every_dropped_ex_to_ld_token_is_caught_before_running(shape, block, kblock, threads
                                                               ) -> None:
    program = _compiled(*shape, block, kblock, threads)
    infos = analyze(program, DEFAULT)
    check_dependencies(program, infos)  # the compiler's tokens are enough
    n = _tokens(program)
    assert n >= 4
    for k in range(n):
        broken = _drop(program, k)
        with pytest.raises(VDLARaceError, match=r"race on .*instruction 0x[0-9a-f]+ \(EXE.*"
                                                r"instruction 0x[0-9a-f]+ \(LOAD.*no "
                                                r"dependency token orders them"):
            check_dependencies(broken, analyze(broken, DEFAULT))


def test_insert_dependencies_output_passes_the_static_check() -> None:
    program = _compiled(64, 32, 32, 16, 16, 2)
    again = insert_dependencies(program, DEFAULT)
    check_dependencies(again, analyze(again, DEFAULT))


def test_tokens_the_timing_check_missed_are_caught_by_simulate() -> None:
    # the dynamic check (check_races) passes a missing token whenever the simulated timing
    # keeps the two instructions apart; simulate now runs the static check first
    import numpy as np

    from mlc.vdla import simulator

    program = _compiled(64, 32, 32, 16, 16, 2)
    missed = []
    for k in range(_tokens(program)):
        broken = _drop(program, k)
        infos = analyze(broken, DEFAULT)
        events, _ = simulator.schedule(broken, infos)
        try:
            simulator.check_races(broken, infos, events)
        except VDLARaceError:
            continue
        missed.append(broken)
    assert missed  # the old check let these run
    s, args = schedules.gemm_schedule(64, 32, 32, 16, 16, 2, True)
    f = mlc.build(s, args, target="vdla")
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (64, 32), dtype=np.int8)
    b = rng.integers(-128, 128, (32, 32), dtype=np.int8)
    f.program = missed[0]
    with pytest.raises(VDLARaceError, match="no dependency token orders them"):
        f(a, b, np.zeros((64, 32), "int32"))


def test_listing_order_across_modules_is_not_a_race() -> None:
    # the queues order the modules, not where an instruction stands in the list: the same
    # queues listed store first, then compute, then load, run identically (the timing check
    # passes) and must pass the static check too; with a token dropped, still caught
    from mlc.vdla import simulator
    from mlc.vdla.isa import Finish

    program = _compiled(32, 32, 32, 16, 8, 1)
    rank = {Module.STORE: 0, Module.COMPUTE: 1, Module.LOAD: 2}

    def regrouped(p: Program) -> Program:
        body = [i for i in p.instructions if not isinstance(i, Finish)]
        ends = [i for i in p.instructions if isinstance(i, Finish)]
        return Program(tuple(sorted(body, key=lambda i: rank[i.module]) + ends), p.uops)

    again = regrouped(program)
    infos = analyze(again, DEFAULT)
    events, _ = simulator.schedule(again, infos)
    simulator.check_races(again, infos, events)
    check_dependencies(again, infos)
    broken = regrouped(_drop(program, 0))
    with pytest.raises(VDLARaceError, match="no dependency token orders them"):
        check_dependencies(broken, analyze(broken, DEFAULT))
