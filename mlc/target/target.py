"""What to compile for: ``"llvm"``, ``"llvm -mcpu=skylake-avx512"``, ``{"kind": "llvm"}``, ``"c"``.

A target is written the TVM way, as a string with ``-key=value`` options or as a dict. Only
the options mlc understands are accepted, so a typo is an error rather than a silent no-op:

=============  ==============================================================
``-mcpu``      the CPU to tune and select instructions for (default: this host)
``-mattr``     LLVM feature string, e.g. ``+avx2,-avx512f`` (default: host's)
``-arch``      GPU architecture for ``"cuda"``, e.g. ``sm_80`` (default: the GPU's)
``-mtriple``   the machine to compile for, e.g. ``aarch64-linux-gnu`` (default: this one);
               ``-target=`` is the same (the notes' ``-target=armv7l-none-linux-gnueabihf``).
               Code for another machine is saved (``lib.save("x.o")``), not run here
``-num-cores`` threads of the parallel loops (TVM's ``"llvm --num-cores=1"``; default:
               ``MLC_NUM_THREADS`` or the CPUs of this machine)
=============  ==============================================================

``"cuda"`` prints CUDA C (and compiles it with NVRTC, runs it on a GPU when there is one);
``"cuda-sim"`` runs the same GPU kernels on the CPU (see :mod:`mlc.target.cuda_sim.simulate`).
"""

from __future__ import annotations

import contextvars
import enum
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mlc.errors import TargetError

if TYPE_CHECKING:
    from mlc.tir.stmt import PrimFunc

_OPTIONS = ("mcpu", "mattr", "arch", "mtriple", "num-cores")
_ALIASES = {"target": "mtriple"}  # the notes' "llvm -target=armv7l-none-linux-gnueabihf"


class TargetKind(str, enum.Enum):
    """The back ends mlc compiles for. A kind compares equal to its name (``"llvm"``)."""

    LLVM = "llvm"
    C = "c"
    CUDA = "cuda"
    CUDA_SIM = "cuda-sim"
    VDLA = "vdla"

    def __str__(self) -> str:
        return self.value


KINDS = tuple(k.value for k in TargetKind)

Pass = Callable[["PrimFunc"], "PrimFunc"]


@dataclass(frozen=True)
class Backend:
    """What a target kind brings to a build, after the common passes of
    :data:`mlc.transform.PASSES`: its own ``passes`` (named, ``PrimFunc -> PrimFunc``, traced
    and verified like the common ones), its ``codegen`` (the lowered PrimFunc and the target
    -> a Module you call), and the ``module_class`` that codegen returns. ``features`` are
    facts about the machine other parts may ask (``"gpu"``: loops bind to blockIdx/threadIdx).

    Each back-end folder defines one ``BACKEND``; :func:`backend` finds it by kind, so adding
    a target is a new folder and one line in :data:`_BACKEND_MODULES`, and nothing else in
    mlc branches on the kind."""

    kind: TargetKind
    description: str
    codegen: Callable[[PrimFunc, Target], Any]
    module_class: type
    passes: tuple[tuple[str, Pass], ...] = ()
    features: frozenset[str] = field(default_factory=frozenset)
    common_passes: tuple[tuple[str, Pass], ...] | None = None
    """The common passes this target runs instead of :data:`mlc.transform.PASSES` (None: all
    of them). VDLA stops before flattening: its DMA and tensor instructions move 2-D tiles."""


_BACKEND_MODULES: dict[TargetKind, str] = {
    TargetKind.LLVM: "mlc.target.llvm",
    TargetKind.C: "mlc.target.c",
    TargetKind.CUDA: "mlc.target.cuda",
    TargetKind.CUDA_SIM: "mlc.target.cuda_sim",
    TargetKind.VDLA: "mlc.target.vdla",
}


def backend(kind: TargetKind | str) -> Backend:
    """The :class:`Backend` of a target kind (its folder is imported on first use)."""
    kind = _kind(kind)
    found: Backend = importlib.import_module(_BACKEND_MODULES[kind]).BACKEND
    return found


def _kind(kind: TargetKind | str) -> TargetKind:
    try:
        return TargetKind(kind)
    except ValueError:
        raise TargetError(
            f"unknown target kind {kind!r}; mlc compiles for {', '.join(KINDS)}"
        ) from None


_CURRENT: contextvars.ContextVar[tuple[Target, ...]] = contextvars.ContextVar(
    "mlc_current_target", default=()
)


@dataclass(frozen=True)
class Target:
    """A parsed target. ``mcpu``/``mattr`` are None for "the machine we run on".

    As in TVM, ``with Target("llvm"):`` makes it the current target: ``mlc.build`` and
    ``mlc.lower`` called without a target inside the block use it (``Target.current()``).
    """

    kind: TargetKind = TargetKind.LLVM
    mcpu: str | None = None
    mattr: str | None = None
    arch: str | None = None
    mtriple: str | None = None
    num_cores: int | None = None
    tag: str | None = field(default=None, compare=False)
    """The TVM tag it was written as (``"nvidia/tesla-p100"``), if any."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", _kind(self.kind))

    @property
    def backend(self) -> Backend:
        """The back end that builds for this target (passes, codegen, Module class)."""
        return backend(self.kind)

    def __enter__(self) -> Target:
        _CURRENT.set((*_CURRENT.get(), self))
        return self

    def __exit__(self, *exc: object) -> None:
        _CURRENT.set(_CURRENT.get()[:-1])

    @staticmethod
    def current() -> Target | None:
        """The target of the innermost ``with Target(...):`` block, if any."""
        stack = _CURRENT.get()
        return stack[-1] if stack else None

    def has_feature(self, name: str) -> bool:
        """``target.has_feature("gpu")``: a fact about the machine, from its back end."""
        return name in self.backend.features

    def __str__(self) -> str:
        text = self.kind.value
        if self.mcpu:
            text += f" -mcpu={self.mcpu}"
        if self.mattr:
            text += f" -mattr={self.mattr}"
        if self.arch:
            text += f" -arch={self.arch}"
        if self.mtriple:
            text += f" -mtriple={self.mtriple}"
        if self.num_cores:
            text += f" --num-cores={self.num_cores}"
        return text


def parse_target(target: str | dict[str, Any] | Target | None) -> Target:
    """Read a target written as a string, a dict or a :class:`Target`.

    >>> parse_target("llvm -mcpu=skylake")
    Target(kind='llvm', mcpu='skylake', mattr=None)
    """
    if target is None:
        return Target.current() or Target()
    if isinstance(target, Target):
        return target
    if isinstance(target, str) and target.split() and "/" in target.split()[0]:
        return _from_tag(target)
    if isinstance(target, dict):
        options = {_ALIASES.get(k, k): v for k, v in target.items()}
        kind = str(options.pop("kind", "llvm"))
    elif isinstance(target, str):
        words = target.split()
        if not words:
            raise TargetError('empty target; use "llvm" or "c"')
        kind, options = words[0], {}
        for word in words[1:]:
            if not word.startswith("-") or "=" not in word:
                raise TargetError(
                    f"cannot read {word!r} in target {target!r}; options look like -mcpu=native"
                )
            key, value = word.lstrip("-").split("=", 1)
            key = _ALIASES.get(key, key)
            if key in options and options[key] != value:
                raise TargetError(f"target {target!r} gives -{key} twice ({options[key]!r} "
                                  f"and {value!r}); give it once")
            options[key] = value
    else:
        raise TargetError(f"a target is a string like \"llvm\", got {type(target).__name__}")
    kind = _kind(kind)
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise TargetError(
            f"unknown target option(s) {', '.join(unknown)}; known: {', '.join(_OPTIONS)}"
        )
    mcpu = options.get("mcpu")
    if mcpu == "native":
        mcpu = None
    return Target(kind, mcpu or None, options.get("mattr") or None, options.get("arch") or None,
                  _triple(options.get("mtriple")), _cores(options.get("num-cores")))


def _cores(text: Any) -> int | None:
    if text is None:
        return None
    try:
        n = int(text)
    except (TypeError, ValueError):
        n = 0
    if n < 1 or n > 4096:
        raise TargetError(f"--num-cores={text!r}: the number of threads is a whole number from 1 "
                          "(e.g. llvm --num-cores=1)")
    return n


# TVM's target tags for NVIDIA GPUs (tvm.target.tag): the GPU, its compute capability
TAGS: dict[str, str] = {
    "nvidia/tesla-p100": "sm_60", "nvidia/tesla-v100": "sm_70", "nvidia/nvidia-t4": "sm_75",
    "nvidia/nvidia-a100": "sm_80", "nvidia/geforce-rtx-3080": "sm_86",
    "nvidia/geforce-rtx-3050-laptop": "sm_86", "nvidia/nvidia-h100": "sm_90",
}


def _from_tag(text: str) -> Target:
    """``"nvidia/tesla-p100"`` (the MLC course's GPU target): ``cuda -arch=sm_60``."""
    words = text.split()
    tag = words[0].lower()
    if tag not in TAGS:
        raise TargetError(f"unknown target tag {words[0]!r}; mlc knows {', '.join(sorted(TAGS))} "
                          '(or write the target out: "cuda -arch=sm_80")')
    if len(words) > 1:
        raise TargetError(f"target tag {words[0]!r} takes no options ({' '.join(words[1:])}); "
                          'write the target out instead: "cuda -arch=sm_80 ..."')
    return Target(TargetKind.CUDA, arch=TAGS[tag], tag=tag)


def _triple(text: str | None) -> str | None:
    """A target triple as written (``aarch64-linux-gnu``), checked for its shape."""
    if not text:
        return None
    parts = text.split("-")
    if len(parts) < 2 or not all(p and p.replace("_", "").replace(".", "").isalnum()
                                 for p in parts):
        raise TargetError(f"-mtriple={text!r} is not a target triple; triples look like "
                          "aarch64-linux-gnu, armv7l-none-linux-gnueabihf, x86_64-linux-gnu")
    return text
