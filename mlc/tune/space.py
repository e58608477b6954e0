"""AutoTVM-style search spaces: knobs defined by a template, and one point of the space.

A template calls ``cfg.define_split("tile_y", y, num_outputs=2)`` and friends. When the tuner
collects the space, ``cfg`` is a :class:`ConfigSpace` (each ``define_*`` adds a knob and
``cfg[name]`` answers with the knob's first choice so the template can run to the end). When
a candidate is built, ``cfg`` is a :class:`ConfigEntity`: ``define_*`` does nothing and
``cfg[name]`` is the chosen entity. A point of the space is one choice per knob, numbered
mixed-radix into a single index.
"""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mlc.errors import TuneError

# ---------------------------------------------------------------------------------------------
# entities: one choice of one knob


@dataclass(frozen=True)
class SplitEntity:
    """Split factors, outermost first; ``-1`` (outermost) means "whatever is left"."""

    size: tuple[int, ...]

    def apply(self, s: Any, tensor: Any, axis: Any) -> list[Any]:
        """Split ``axis`` of ``s[tensor]``; returns the new axes, outermost first."""
        axes = []
        for factor in reversed(self.size[1:]):
            axis, inner = s[tensor].split(axis, factor=factor)
            axes.append(inner)
        axes.append(axis)
        return axes[::-1]

    @property
    def val(self) -> tuple[int, ...]:
        return self.size

    def to_json(self) -> Any:
        return list(self.size)


@dataclass(frozen=True)
class ReorderEntity:
    perm: tuple[int, ...]

    def apply(self, s: Any, tensor: Any, axes: Sequence[Any]) -> list[Any]:
        ordered = [axes[i] for i in self.perm]
        s[tensor].reorder(*ordered)
        return ordered

    @property
    def val(self) -> tuple[int, ...]:
        return self.perm

    def to_json(self) -> Any:
        return list(self.perm)


@dataclass(frozen=True)
class AnnotateEntity:
    """One of ``"none"``, ``"unroll"``, ``"vec"``, ``"parallel"`` per axis."""

    anns: tuple[str, ...]

    def apply(self, s: Any, tensor: Any, axes: Sequence[Any]) -> None:
        for ax, ann in zip(axes, self.anns):
            if ann == "unroll":
                s[tensor].unroll(ax)
            elif ann == "vec":
                s[tensor].vectorize(ax)
            elif ann == "parallel":
                s[tensor].parallel(ax)

    @property
    def val(self) -> tuple[str, ...]:
        return self.anns

    def to_json(self) -> Any:
        return list(self.anns)


@dataclass(frozen=True)
class OtherEntity:
    value: Any

    @property
    def val(self) -> Any:
        return self.value

    def to_json(self) -> Any:
        return self.value


Entity = SplitEntity | ReorderEntity | AnnotateEntity | OtherEntity


@dataclass(frozen=True)
class Knob:
    """A named choice with its list of entities (``len(knob)`` choices)."""

    name: str
    kind: str
    entities: tuple[Entity, ...]

    def __len__(self) -> int:
        return len(self.entities)

    def __repr__(self) -> str:
        shown = ", ".join(str(e.to_json()) for e in self.entities[:4])
        more = ", ..." if len(self.entities) > 4 else ""
        return f"{self.name} ({self.kind}, {len(self)} choices): [{shown}{more}]"


def _extent(axis: Any) -> int:
    """The constant length of a te axis (an IterVar or a facade axis with ``.dom``)."""
    from mlc.tir.expr import IntImm

    dom = getattr(axis, "dom", None)
    extent = getattr(dom, "extent", None)
    if isinstance(extent, IntImm):
        return extent.value
    if isinstance(axis, int):
        return axis
    raise TuneError(f"define_split needs an axis with a constant length, got {axis!r}")


def split_factors(extent: int, num_outputs: int, policy: str, max_factor: int | None) -> list[
    tuple[int, ...]
]:
    """Every way to write ``extent`` as ``num_outputs`` factors (``policy="factors"``: exact
    divisors; ``"power2"``: inner factors are powers of two, the outer one is ``-1`` and the
    split may not divide)."""
    if policy == "factors":
        divisors = [d for d in range(1, extent + 1) if extent % d == 0]
    elif policy == "power2":
        divisors = [2**k for k in range(int(math.log2(max(extent, 1))) + 1)]
    else:
        raise TuneError(f"unknown split policy {policy!r}; use 'factors' or 'power2'")
    if max_factor is not None:
        divisors = [d for d in divisors if d <= max_factor]
    out = []
    for inner in itertools.product(divisors, repeat=num_outputs - 1):
        prod = math.prod(inner)
        if prod > extent or (policy == "factors" and extent % prod):
            continue
        out.append((-1, *inner))
    return out


# ---------------------------------------------------------------------------------------------
# the space and one point of it


class ConfigSpace:
    """All knobs of a template. ``len(space)`` is the number of points."""

    def __init__(self) -> None:
        self.knobs: dict[str, Knob] = {}

    # -- define_* (space collection) ---------------------------------------------------------
    def define_split(
        self,
        name: str,
        axis: Any,
        num_outputs: int = 2,
        policy: str = "factors",
        max_factor: int | None = None,
    ) -> None:
        """Choices of split factors for ``axis``: ``cfg[name].apply(s, T, axis)`` splits it
        into ``num_outputs`` loops."""
        sizes = split_factors(_extent(axis), num_outputs, policy, max_factor)
        self._add(Knob(name, "split", tuple(SplitEntity(s) for s in sizes)))

    def define_reorder(
        self, name: str, axes: Sequence[Any], policy: str = "all",
        candidate: Sequence[Sequence[int]] | None = None,
    ) -> None:
        """Loop orders: every permutation (``"all"``) or the given ``candidate`` orders."""
        if policy == "all":
            perms = list(itertools.permutations(range(len(axes))))
        elif policy == "candidate" and candidate:
            perms = [tuple(c) for c in candidate]
        else:
            raise TuneError(
                "define_reorder: use policy='all' or policy='candidate' with candidate="
            )
        self._add(Knob(name, "reorder", tuple(ReorderEntity(tuple(p)) for p in perms)))

    def define_annotate(self, name: str, axes: Sequence[Any], policy: str = "try_unroll") -> None:
        """Per-axis annotations: ``try_unroll``, ``try_vec`` (last axis) or ``try_unroll_vec``."""
        n = len(axes)
        if policy == "try_unroll":
            options = [("none",) * n] + [("unroll",) * n]
        elif policy == "try_vec":
            options = [("none",) * n, ("none",) * (n - 1) + ("vec",)]
        elif policy == "try_unroll_vec":
            options = [
                ("none",) * n,
                ("unroll",) * n,
                ("none",) * (n - 1) + ("vec",),
                ("unroll",) * (n - 1) + ("vec",),
            ]
        else:
            raise TuneError(f"unknown annotate policy {policy!r}")
        self._add(Knob(name, "annotate", tuple(AnnotateEntity(o) for o in options)))

    def define_knob(self, name: str, values: Sequence[Any]) -> None:
        """A free choice among ``values``: ``cfg[name].val``."""
        self._add(Knob(name, "other", tuple(OtherEntity(v) for v in values)))

    def _add(self, knob: Knob) -> None:
        if not knob.entities:
            raise TuneError(f"knob {knob.name!r} has no choices")
        self.knobs.setdefault(knob.name, knob)

    # -- reading -----------------------------------------------------------------------------
    def __getitem__(self, name: str) -> Entity:
        """During space collection: the first choice, so the template runs to its end."""
        if name not in self.knobs:
            raise TuneError(f"no knob named {name!r}; define it first (knobs: {list(self.knobs)})")
        return self.knobs[name].entities[0]

    def __len__(self) -> int:
        return math.prod(len(k) for k in self.knobs.values()) if self.knobs else 1

    @property
    def dims(self) -> list[int]:
        return [len(k) for k in self.knobs.values()]

    def get(self, index: int) -> ConfigEntity:
        """The point numbered ``index`` (mixed radix over the knobs, first knob fastest)."""
        try:
            whole = operator.index(index)  # int, numpy ints; not floats or strings
        except TypeError:
            whole = -1
        if isinstance(index, bool) or not 0 <= whole < len(self):
            raise TuneError(f"config index {index!r} is outside the space of {len(self)} "
                            f"points: use an int from 0 to {len(self) - 1}")
        index = whole
        choices = []
        rest = index
        for knob in self.knobs.values():
            choices.append(rest % len(knob))
            rest //= len(knob)
        return ConfigEntity(self, index, tuple(choices))

    def index_of(self, choices: Sequence[int]) -> int:
        index, scale = 0, 1
        for c, knob in zip(choices, self.knobs.values()):
            index += c * scale
            scale *= len(knob)
        return index

    def __repr__(self) -> str:
        lines = [f"ConfigSpace ({len(self)} points):"]
        lines += [f"  {k!r}" for k in self.knobs.values()]
        return "\n".join(lines)


class ConfigEntity:
    """One point of a space: a choice per knob. ``cfg[name]`` is the chosen entity."""

    def __init__(self, space: ConfigSpace, index: int, choices: tuple[int, ...]) -> None:
        self.space = space
        self.index = index
        self.choices = choices

    def __getitem__(self, name: str) -> Entity:
        for (knob_name, knob), c in zip(self.space.knobs.items(), self.choices):
            if knob_name == name:
                return knob.entities[c]
        raise TuneError(f"no knob named {name!r} in this config (knobs: {list(self.space.knobs)})")

    # a template's define_* calls are no-ops once the space is known
    def define_split(self, *args: Any, **kwargs: Any) -> None:
        pass

    define_reorder = define_annotate = define_knob = define_split

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "entities": {name: self[name].to_json() for name in self.space.knobs},
        }

    def knob_features(self) -> list[float]:
        """The choice of each knob as numbers (the ``feature="knob"`` input of the model)."""
        out: list[float] = []
        for knob, c in zip(self.space.knobs.values(), self.choices):
            entity = knob.entities[c]
            if isinstance(entity, SplitEntity):
                out += [math.log2(abs(f)) if f > 0 else 0.0 for f in entity.size[1:]]
            else:
                out.append(float(c))
        return out

    def __repr__(self) -> str:
        parts = ", ".join(f"{k}={v}" for k, v in self.to_json()["entities"].items())
        return f"Config #{self.index}: {parts}"
