"""What to compile for: ``"llvm"``, ``"llvm -mcpu=skylake-avx512"``, ``{"kind": "llvm"}``, ``"c"``.

A target is written the TVM way, as a string with ``-key=value`` options or as a dict. Only
the options mlc understands are accepted, so a typo is an error rather than a silent no-op:

=============  ==============================================================
``-mcpu``      the CPU to tune and select instructions for (default: this host)
``-mattr``     LLVM feature string, e.g. ``+avx2,-avx512f`` (default: host's)
``-arch``      GPU architecture for ``"cuda"``, e.g. ``sm_80`` (default: the GPU's)
=============  ==============================================================

``"cuda"`` prints CUDA C (and compiles it with NVRTC, runs it on a GPU when there is one);
``"cuda-sim"`` runs the same GPU kernels on the CPU (see :mod:`mlc.codegen.cuda_sim`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mlc.errors import MLCError

KINDS = ("llvm", "c", "cuda", "cuda-sim")
_OPTIONS = ("mcpu", "mattr", "arch")


class TargetError(MLCError, ValueError):
    """A target string or dict that mlc cannot compile for."""


@dataclass(frozen=True)
class Target:
    """A parsed target. ``mcpu``/``mattr`` are None for "the machine we run on"."""

    kind: str = "llvm"
    mcpu: str | None = None
    mattr: str | None = None
    arch: str | None = None

    def __str__(self) -> str:
        text = self.kind
        if self.mcpu:
            text += f" -mcpu={self.mcpu}"
        if self.mattr:
            text += f" -mattr={self.mattr}"
        if self.arch:
            text += f" -arch={self.arch}"
        return text


def parse_target(target: str | dict[str, Any] | Target | None) -> Target:
    """Read a target written as a string, a dict or a :class:`Target`.

    >>> parse_target("llvm -mcpu=skylake")
    Target(kind='llvm', mcpu='skylake', mattr=None)
    """
    if target is None:
        return Target()
    if isinstance(target, Target):
        return target
    if isinstance(target, dict):
        options = dict(target)
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
            options[key] = value
    else:
        raise TargetError(f"a target is a string like \"llvm\", got {type(target).__name__}")
    if kind not in KINDS:
        raise TargetError(f"unknown target kind {kind!r}; mlc compiles for {', '.join(KINDS)}")
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise TargetError(
            f"unknown target option(s) {', '.join(unknown)}; known: {', '.join(_OPTIONS)}"
        )
    mcpu = options.get("mcpu")
    if mcpu == "native":
        mcpu = None
    return Target(kind, mcpu or None, options.get("mattr") or None, options.get("arch") or None)
