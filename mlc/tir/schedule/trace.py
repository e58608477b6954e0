"""The trace: every primitive a Schedule applied, as replayable JSON data.

Each instruction is ``[kind, inputs, outputs]``: ``kind`` is the primitive's method name,
``inputs`` its keyword arguments with handles written as ``"$b0"`` (a block), ``"$l3"`` (a
loop) or ``"$v5"`` (a sampled value), and ``outputs`` the ids of the handles it returned.
Sampling instructions keep their decision in ``inputs["decision"]``, so replaying a trace
makes the same choices. The same JSON rebuilds the schedule on a fresh PrimFunc::

    data = sch.trace.as_json()
    sch2 = tir.Schedule(func)
    tir.Trace.apply_json_to_schedule(data, sch2)
"""

from __future__ import annotations

import functools
import inspect
import json
import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mlc.errors import ScheduleError, TraceError

if TYPE_CHECKING:
    from mlc.tir.schedule.schedule import Schedule


class BlockRV:
    """A handle to a block. It keeps naming the same block through transformations."""

    def __init__(self, rv_id: str) -> None:
        self.rv_id = rv_id

    def __repr__(self) -> str:
        return f"BlockRV({self.rv_id})"


class LoopRV:
    """A handle to a loop. It keeps naming the same loop while the loop exists."""

    def __init__(self, rv_id: str) -> None:
        self.rv_id = rv_id

    def __repr__(self) -> str:
        return f"LoopRV({self.rv_id})"


class SampledInt(int):
    """An int chosen by ``sample_*``; it remembers where it came from so the trace links a
    split's factors to the sampling decision that produced them."""

    rv_id: str

    def __new__(cls, value: int, rv_id: str) -> SampledInt:
        obj = super().__new__(cls, value)
        obj.rv_id = rv_id
        return obj


Handle = BlockRV | LoopRV | SampledInt


@dataclass
class Instruction:
    kind: str
    inputs: dict[str, Any]
    outputs: list[str]

    def as_python(self) -> str:
        args = ", ".join(f"{k}={_py(v)}" for k, v in self.inputs.items())
        lhs = ", ".join(self.outputs)
        call = f"sch.{self.kind}({args})"
        return f"{lhs} = {call}" if lhs else call


def _py(value: Any) -> str:
    if isinstance(value, str) and value.startswith("$"):
        return value[1:]
    if isinstance(value, list):
        return "[" + ", ".join(_py(v) for v in value) + "]"
    return repr(value)


@dataclass
class Trace:
    """The list of primitives applied so far. ``print(sch.trace)`` shows them as code."""

    insts: list[Instruction] = field(default_factory=list)

    def as_json(self) -> list[list[Any]]:
        return [[i.kind, i.inputs, i.outputs] for i in self.insts]

    def as_python(self) -> str:
        return "\n".join(i.as_python() for i in self.insts)

    def __repr__(self) -> str:
        return self.as_python() or "# (empty trace)"

    def __len__(self) -> int:
        return len(self.insts)

    @property
    def decisions(self) -> dict[int, Any]:
        """Index of each sampling instruction -> its decision (the tuner's search point)."""
        return {
            k: inst.inputs["decision"]
            for k, inst in enumerate(self.insts)
            if "decision" in inst.inputs
        }

    def apply_to_schedule(
        self, sch: Schedule, decisions: dict[int, Any] | None = None
    ) -> None:
        """Replay on ``sch`` (a fresh Schedule of the same PrimFunc). ``decisions`` overrides
        the recorded choice of sampling instructions by index."""
        Trace.apply_json_to_schedule(self.as_json(), sch, decisions)

    @staticmethod
    def apply_json_to_schedule(
        json_obj: Any, sch: Schedule, decisions: dict[int, Any] | None = None
    ) -> None:
        """Replay JSON made by :meth:`as_json` (or its ``json.dumps`` text) on ``sch``.

        The trace is checked before each instruction runs: its shape (``[kind, inputs,
        outputs]``), the kind (a primitive of :class:`~mlc.tir.Schedule`), the argument names
        and value types, and every handle (defined by an earlier instruction, of the right
        kind). Anything wrong, and any primitive that refuses its arguments, raises
        :class:`~mlc.errors.TraceError` (a ``ScheduleError``) naming the instruction."""
        insts = check_trace(json_obj)
        handles: dict[str, Any] = {}
        for k, (kind, inputs, outputs) in enumerate(insts):
            override = decisions.get(k) if decisions and k in decisions else None
            replay_instruction(sch, k, kind, inputs, outputs, handles, override)


def _flatten(result: Any) -> list[Any]:
    if result is None:
        return []
    if isinstance(result, (list, tuple)):
        out: list[Any] = []
        for r in result:
            out.extend(_flatten(r))
        return out
    return [result]


# ---------------------------------------------------------------------------------------------
# checking a trace before replay
#
# A trace may come from a file, a student's notebook or a tuning log, so it is checked as
# data before anything runs. A primitive declares the kinds of its arguments where it is
# defined, by its type annotations (``loop: LoopRV``, ``factors: Sequence[int | PrimExpr |
# None]``): :func:`arg_kinds` reads them, and replay checks each value against its kind. An
# annotation a trace cannot record is an error the first time the primitive is replayed (a
# test replays them all), never a handle passed on as a string.

MAX_INSTRUCTIONS = 100_000
MAX_LIST = 256  # longest list argument (factors, loops, candidates...)
MAX_INT = 2**63 - 1

# argument kinds: "block", "loop", "block_or_loop" (handles), "blocks", "loops" (lists of
# handles), "int", "bool", "str", "factors" (ints, null or "$v" sampled values), "ints",
# "floats", "decision" (null, an int or a list of ints), "json" (any plain JSON value)
_KIND_OF_ANNOTATION: dict[str, str] = {
    "str": "str",
    "str | None": "str_or_null",
    "str | IndexMap": "str",           # recorded as the index map's text
    "str | TensorIntrin": "str",       # recorded as the intrinsic's registered name
    "int": "int",
    "bool": "bool",
    "Any": "json",
    "BlockRV": "block",
    "LoopRV": "loop",
    "BlockRV | LoopRV": "block_or_loop",
    "Sequence[BlockRV] | None": "blocks",
    "Sequence[int | PrimExpr | None]": "factors",
    "Sequence[int]": "ints",
    "Sequence[float]": "floats",
}
# a sampling instruction's recorded decision, whatever its Python type
_DECISION = {"decision": "decision"}


def arg_kinds(method: Any) -> dict[str, str]:
    """The trace argument kinds of one primitive, read from its signature: ``fuse(*loops:
    LoopRV)`` records ``loops`` as a list of loop handles. Raises :class:`TypeError` for an
    annotation a trace cannot record (a new primitive's author meets it in the tests)."""
    return dict(_kinds_of(method))


@functools.cache
def _kinds_of(method: Any) -> tuple[tuple[str, str], ...]:
    """:func:`arg_kinds`, read once per primitive (replay asks for every instruction of
    every candidate a tuner measures)."""
    kinds: dict[str, str] = {}
    for p in inspect.signature(method).parameters.values():
        if p.name == "self" or p.kind is inspect.Parameter.VAR_KEYWORD:
            continue
        ann = p.annotation if isinstance(p.annotation, str) else getattr(
            p.annotation, "__name__", repr(p.annotation))
        if p.name in _DECISION:
            kinds[p.name] = _DECISION[p.name]
        elif p.kind is inspect.Parameter.VAR_POSITIONAL and ann == "LoopRV":
            kinds[p.name] = "loops"
        elif ann in _KIND_OF_ANNOTATION:
            kinds[p.name] = _KIND_OF_ANNOTATION[ann]
        else:
            raise TypeError(
                f"Schedule.{method.__name__}: parameter {p.name!r} is annotated {ann!r}, which "
                f"a trace cannot record; annotate it with one of {sorted(_KIND_OF_ANNOTATION)} "
                "(mlc/tir/schedule/trace.py)")
    return tuple(kinds.items())


# Public Schedule members that are not instructions of a trace.
_NOT_INSTRUCTIONS = {"copy", "show", "get", "mod", "func", "trace", "seed"}

_HANDLE_ID = re.compile(r"[blv][0-9]{1,9}")


def _bad(k: int | None, kind: Any, message: str) -> TraceError:
    if k is None:
        return TraceError(f"trace: {message}")
    label = kind if isinstance(kind, str) and len(kind) <= 40 else "?"
    return TraceError(f"trace instruction {k} ({label}): {message}")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number a trace may hold")


def check_trace(json_obj: Any) -> list[tuple[str, dict[str, Any], list[str]]]:
    """The instructions of a trace, each ``(kind, inputs, outputs)``, after checking the
    shape of every instruction; raises :class:`TraceError` for anything malformed."""
    if isinstance(json_obj, (bytes, bytearray)):
        try:
            json_obj = json_obj.decode("utf-8")
        except UnicodeDecodeError as err:
            raise _bad(None, None, f"the trace text is not UTF-8 ({err})") from None
    if isinstance(json_obj, str):
        try:
            json_obj = json.loads(json_obj, parse_constant=_reject_constant)
        except (ValueError, RecursionError) as err:
            raise _bad(None, None, f"the trace text is not valid JSON ({err})") from None
    if not isinstance(json_obj, (list, tuple)):
        raise _bad(None, None, f"a trace is a list of instructions, got {type(json_obj).__name__}")
    if len(json_obj) > MAX_INSTRUCTIONS:
        raise _bad(None, None, f"{len(json_obj)} instructions (at most {MAX_INSTRUCTIONS})")
    insts = []
    for k, entry in enumerate(json_obj):
        if not isinstance(entry, (list, tuple)) or len(entry) != 3:
            raise _bad(k, None, "an instruction is [kind, inputs, outputs]")
        kind, inputs, outputs = entry
        if not isinstance(kind, str) or not kind.isidentifier() or kind.startswith("_"):
            raise _bad(k, None, f"unknown instruction kind {_short(kind)}")
        if not isinstance(inputs, dict) or not all(isinstance(n, str) for n in inputs):
            raise _bad(k, kind, "the inputs must be a mapping of argument names to values")
        if not isinstance(outputs, (list, tuple)) or not all(
            isinstance(o, str) and _HANDLE_ID.fullmatch(o) for o in outputs
        ):
            raise _bad(k, kind, f"the outputs must be handle ids like 'b0', got {_short(outputs)}")
        insts.append((kind, dict(inputs), list(outputs)))
    return insts


def _short(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a repr that fails still gets a message
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 60 else text[:57] + "..."


def _arg_kinds(sch: Schedule, k: int, kind: str) -> tuple[dict[str, str], set[str]]:
    """The arguments ``kind`` takes (name -> argument kind) and the required ones."""
    method = getattr(type(sch), kind, None)
    if kind in _NOT_INSTRUCTIONS or not callable(method) or isinstance(method, property):
        raise _bad(k, kind, f"unknown instruction kind {kind!r}: not a schedule primitive")
    try:
        known = arg_kinds(method)
    except TypeError as err:
        raise _bad(k, kind, str(err)) from None
    return known, set(_required_of(method))


@functools.cache
def _required_of(method: Any) -> frozenset[str]:
    """The arguments a primitive cannot do without; ``fuse(*loops)`` and
    ``reorder(*ordered_loops)`` record their loops as one list argument, required too."""
    kinds = dict(_kinds_of(method))
    required = {
        p.name
        for p in inspect.signature(method).parameters.values()
        if p.default is inspect.Parameter.empty
        and p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    }
    return frozenset(n for n in kinds if n in required or kinds[n] == "loops")


def _plain_json(value: Any, depth: int = 0) -> bool:
    """A JSON scalar or a short, shallow list of them (no NaN or infinity, no huge ints)."""
    if value is None or isinstance(value, (bool, str)):
        return not isinstance(value, str) or len(value) <= 10_000
    if isinstance(value, int):
        return abs(value) <= MAX_INT
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, (list, tuple)) and depth < 4 and len(value) <= MAX_LIST:
        return all(_plain_json(v, depth + 1) for v in value)
    return False


def _decode_arg(
    k: int, kind: str, name: str, akind: str, value: Any, handles: dict[str, Any]
) -> Any:
    """The Python value of one argument, checked against its kind."""

    def fail(what: str) -> TraceError:
        return _bad(k, kind, f"argument {name!r} must be {what}, got {_short(value)}")

    def handle(v: Any, want: tuple[str, ...], what: str) -> Any:
        if not (isinstance(v, str) and v.startswith("$") and _HANDLE_ID.fullmatch(v[1:])):
            raise fail(what)
        if v[1:] not in handles:
            raise _bad(k, kind, f"argument {name!r} refers to {v[1:]} before it is defined")
        h = handles[v[1:]]
        if type(h).__name__ not in want:
            raise _bad(
                k, kind, f"argument {name!r}: {v[1:]} is a {type(h).__name__}, not {what}"
            )
        return h

    def is_int(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and abs(v) <= MAX_INT

    def short_list(v: Any) -> bool:
        return isinstance(v, (list, tuple)) and len(v) <= MAX_LIST

    if akind == "block":
        if isinstance(value, str) and not value.startswith("$") and len(value) <= 200:
            return value  # a block by name
        return handle(value, ("BlockRV",), "a block handle")
    if akind == "loop":
        return handle(value, ("LoopRV",), "a loop handle")
    if akind == "block_or_loop":
        return handle(value, ("BlockRV", "LoopRV"), "a block or loop handle")
    if akind in ("blocks", "loops"):
        if value is None and akind == "blocks":
            return None
        if not short_list(value):
            raise fail(f"a list of {akind[:-1]} handles")
        want = ("BlockRV",) if akind == "blocks" else ("LoopRV",)
        return [handle(v, want, f"a {akind[:-1]} handle") for v in value]
    if akind == "int":
        if not is_int(value):
            raise fail("an integer")
        return value
    if akind == "bool":
        if not isinstance(value, bool):
            raise fail("true or false")
        return value
    if akind == "str":
        if not isinstance(value, str) or len(value) > 200:
            raise fail("a string")
        return value
    if akind == "str_or_null":
        if value is not None and (not isinstance(value, str) or len(value) > 200):
            raise fail("a string or null")
        return value
    if akind == "factors":
        if not short_list(value):
            raise fail("a list of factors")
        out = []
        for v in value:
            if isinstance(v, str):
                out.append(handle(v, ("SampledInt",), "a sampled value"))
            elif v is None or is_int(v) or _is_expr(v):
                out.append(v)
            else:
                raise fail("a list of integers, null or sampled values")
        return out
    if akind == "ints":
        if not short_list(value) or not all(is_int(v) for v in value):
            raise fail("a list of integers")
        return list(value)
    if akind == "floats":
        if not short_list(value) or not all(
            (is_int(v) or isinstance(v, float)) and math.isfinite(v) for v in value
        ):
            raise fail("a list of finite numbers")
        return list(value)
    if akind == "decision":
        if value is None or is_int(value):
            return value
        if short_list(value) and all(is_int(v) for v in value):
            return list(value)
        raise fail("null, an integer or a list of integers")
    if not _plain_json(value) and not _is_expr(value):
        raise fail("a plain JSON value (a number, a string, a short list)")
    if isinstance(value, str) and value.startswith("$"):
        if value[1:] not in handles:
            raise _bad(k, kind, f"argument {name!r} refers to {value[1:]} before it is defined")
        return handles[value[1:]]
    return value


def _is_expr(value: Any) -> bool:
    from mlc.tir.expr import PrimExpr

    return isinstance(value, PrimExpr)


def replay_instruction(
    sch: Schedule,
    k: int,
    kind: str,
    inputs: dict[str, Any],
    outputs: list[str],
    handles: dict[str, Any],
    decision: Any = None,
) -> None:
    """Check instruction ``k`` against the primitive it names, run it on ``sch``, and record
    the handles it returns under ``outputs``."""
    kinds, required = _arg_kinds(sch, k, kind)
    extra = sorted(set(inputs) - set(kinds))
    if extra:
        raise _bad(
            k, kind, f"unknown argument{'s' if len(extra) > 1 else ''} {', '.join(extra)} "
            f"(it takes {', '.join(kinds) or 'none'})"
        )
    missing = sorted(required - set(inputs))
    if missing:
        plural = "s" if len(missing) > 1 else ""
        raise _bad(k, kind, f"missing argument{plural} {', '.join(missing)}")
    args = {n: _decode_arg(k, kind, n, kinds[n], v, handles) for n, v in inputs.items()}
    if decision is not None:
        if "decision" not in kinds:
            raise _bad(k, kind, "a decision was given for an instruction that samples nothing")
        args["decision"] = _decode_arg(k, kind, "decision", "decision", decision, handles)
    try:
        result = getattr(sch, kind)(**args)
    except TraceError:
        raise
    except ScheduleError as err:
        raise _bad(k, kind, str(err)) from err
    except RecursionError:
        raise _bad(k, kind, "the program is too deeply nested to replay this step") from None
    except Exception as err:  # noqa: BLE001 - a trace must never fail with another type
        raise _bad(k, kind, f"the primitive refused its arguments ({type(err).__name__}: "
                   f"{_short(str(err))})") from err
    returned = _flatten(result)
    if len(returned) != len(outputs):
        raise _bad(
            k, kind, f"returned {len(returned)} handles, the trace expects {len(outputs)}"
        )
    prefix = {"BlockRV": "b", "LoopRV": "l", "SampledInt": "v"}
    for rv_id, h in zip(outputs, returned):
        if prefix.get(type(h).__name__) != rv_id[0]:
            raise _bad(k, kind, f"output {rv_id} names a {type(h).__name__}")
        handles[rv_id] = h
