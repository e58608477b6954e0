"""Low-precision dot products (``dp4a``, ``dp4a_u7``, ``dp2a_bf16``): one instruction where the
CPU has it.

The rows of the intrinsic table (:mod:`mlc.tir.intrin`) whose LLVM form is ``"dot"``:

=================================================  ===========================================
``dp4a(acc: int32xN, a: uint8x4N, b: int8x4N)``     lane j: ``acc[j] + sum_g a[4j+g] * b[4j+g]``
``dp4a_u7(acc, a, b)``, every byte of ``a`` < 128   the same
``dp2a_bf16(acc: float32xN, a, b: uint16x2N)``      lane j: ``acc[j] + sum_g a[2j+g] * b[2j+g]``
=================================================  ===========================================

(``bf16_to_f32(bits)``, the third row, is the exact conversion the descriptions use.
``a`` may also have 4, resp. 2, lanes: the same group for every output lane, the
"broadcast one operand" of a GEMM micro-kernel; bfloat16 values travel as their ``uint16`` bits.)

What the code generator emits depends on the target's CPU features (the host's, read from
LLVM, unless the target names ``-mcpu``/``-mattr``):

* AVX-512 VNNI: ``llvm.x86.avx512.vpdpbusd.512`` (16 lanes: 64 multiply-adds in one
  instruction); AVX-VNNI or AVX-512 VNNI + VL: ``llvm.x86.avx512.vpdpbusd.256`` (8 lanes);
* ``dp4a_u7`` without VNNI: ``vpmaddubsw`` (``llvm.x86.avx2.pmadd.ub.sw``; AVX-512BW and
  SSSE3 forms too) multiplies u8 x s8 and adds each pair into a *saturating* int16, then
  ``vpmaddwd`` with ones adds the int16 pairs into int32. Saturation needs
  ``|a0 b0 + a1 b1| > 32767``; with ``a < 128`` and ``b >= -128`` the pair is at most
  ``127 * 128 * 2 = 32512`` in size, so this is exact: 3 instructions per 32 (AVX2) products
  instead of the fallback's ~8, about 1.33x the fp32 FMA rate;
* AVX512_BF16: ``llvm.x86.avx512bf16.dpbf16ps.512``;
* anything else: the same arithmetic written portably (bytes widened to int32, multiplied,
  lanes added in pairs); on AVX2 LLVM turns it into ``vpmovzxbw``/``vpmovsxbw`` + ``vpmaddwd``.
  The fallback is exact, and mlc says once that it is taking it.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

import llvmlite.binding as llvm
from llvmlite import ir

from mlc.errors import CodegenError
from mlc.target.llvm import types as ty
from mlc.tir import dtype as dt


def _fits(n: int, width: int) -> bool:
    """``n`` lanes are a power-of-two number of ``width``-lane instructions."""
    count = n // width if width else 0
    return bool(width) and n % width == 0 and count & (count - 1) == 0


class _Target(Protocol):
    @property
    def mcpu(self) -> str | None: ...

    @property
    def mattr(self) -> str | None: ...


def cpu_features(target: _Target | None = None) -> frozenset[str]:
    """The CPU features code is generated for: the host's (``llvm.get_host_cpu_features()``)
    changed by the target's ``-mattr=+f,-g``; with ``-mcpu`` only what ``-mattr`` names.

    ``"llvm -mattr=-avx512vnni,-avxvnni"`` therefore builds the portable fallback on any CPU,
    and ``"llvm -mcpu=sapphirerapids -mattr=+avx512f,+avx512bw,+avx512vl,+avx512vnni"`` the
    VNNI code on any CPU (to read, not to run)."""
    mcpu = target.mcpu if target is not None else None
    mattr = target.mattr if target is not None else None
    feats: set[str] = set()
    if mcpu is None:
        feats = {k for k, on in llvm.get_host_cpu_features().items() if on}
    for word in (mattr or "").split(","):
        word = word.strip()
        if word.startswith("+"):
            feats.add(word[1:])
        elif word.startswith("-"):
            feats.discard(word[1:])
    return frozenset(feats)


def vnni_lanes(features: frozenset[str]) -> int:
    """int32 lanes of the widest ``vpdpbusd`` the features allow (0: none)."""
    if "avx512vnni" in features and "avx512f" in features:
        return 16
    if "avxvnni" in features or {"avx512vnni", "avx512vl"} <= features:
        return 8
    return 0


def pmadd_lanes(features: frozenset[str]) -> int:
    """int32 lanes of the widest ``vpmaddubsw`` + ``vpmaddwd`` pair the features allow."""
    if "avx512bw" in features:
        return 16
    if "avx2" in features:
        return 8
    if "ssse3" in features:
        return 4
    return 0


#: the (u8 x s8 -> saturating int16 pairs, int16 x int16 -> int32 pairs) intrinsics by lanes
_PMADD = {16: ("llvm.x86.avx512.pmaddubs.w.512", "llvm.x86.avx512.pmaddw.d.512"),
          8: ("llvm.x86.avx2.pmadd.ub.sw", "llvm.x86.avx2.pmadd.wd"),
          4: ("llvm.x86.ssse3.pmadd.ub.sw.128", "llvm.x86.sse2.pmadd.wd")}


def bf16_lanes(features: frozenset[str]) -> int:
    """float32 lanes of the widest ``vdpbf16ps`` the features allow (0: none)."""
    if "avx512bf16" in features and "avx512f" in features:
        return 16
    return 0


_NOTICE = {
    "dp4a": "this CPU has no AVX-512 VNNI / AVX-VNNI (vpdpbusd): int8 dot products (dp4a) "
            "run as portable widening multiply-adds (vpmaddwd on AVX2)",
    "dp4a_u7": "this CPU has neither vpdpbusd nor vpmaddubsw (SSSE3): 7-bit int8 dot "
               "products (dp4a_u7) run as portable widening multiply-adds",
    "dp2a_bf16": "this CPU has no AVX512_BF16 (vdpbf16ps): bfloat16 dot products (dp2a_bf16) "
                 "run as float32 multiply-adds",
}


class DotEmitter:
    """Mixin: ``dot_product(op, args, dtype)``. Needs ``self.b`` and ``self.declare``."""

    b: ir.IRBuilder
    cpu_features: frozenset[str] = frozenset()

    if TYPE_CHECKING:  # provided by ExprEmitter

        def declare(self, name: str, fnty: ir.FunctionType) -> ir.Function: ...

    def dot_product(self, op: str, args: list[ir.Value], dtype: str) -> ir.Value:
        if op == "bf16_to_f32":
            return self._bf16_to_f32(args[0])
        acc, a, b = args
        n = dt.lanes(dtype)
        byte = op in ("dp4a", "dp4a_u7")
        group = 4 if byte else 2
        want = "int32" if byte else "float32"
        if dt.element(dtype) != want or ty.lanes_of(b.type) != group * n:
            raise CodegenError(
                f"{op}(acc, a, b) takes acc of {want}xN, a of {group} or {group}*N lanes and b "
                f"of {group}*N lanes; got {dtype} with b of {ty.lanes_of(b.type)} lanes")
        if ty.lanes_of(a.type) == group and n > 1:  # the same group for every lane
            a = self.b.shuffle_vector(a, ir.Constant(a.type, None), ir.Constant(
                ir.VectorType(ty.I32, group * n), [k % group for k in range(group * n)]))
        width = vnni_lanes(self.cpu_features) if byte else bf16_lanes(self.cpu_features)
        if _fits(n, width):
            return self._split(n, width, acc, a, b, group, lambda *v: self._instruction(op, *v))
        if op == "dp4a_u7":
            pw = pmadd_lanes(self.cpu_features)
            while pw > 4 and not _fits(n, pw):
                pw //= 2
            if _fits(n, pw):
                return self._split(n, pw, acc, a, b, group, self._pmadd)
            width = max(width, pw)
        if width == 0:
            warnings.warn(_NOTICE[op], stacklevel=2)
        return self._portable(op, acc, a, b, n)

    def _split(self, n: int, width: int, acc: ir.Value, a: ir.Value, b: ir.Value, group: int,
               emit: Callable[[ir.Value, ir.Value, ir.Value], ir.Value]) -> ir.Value:
        """``emit`` on each ``width`` lanes (and their bytes) of ``acc``, the parts joined."""
        parts = [emit(*(self._lanes(v, k * width * s, width * s)
                        for v, s in ((acc, 1), (a, group), (b, group))))
                 for k in range(n // width)]
        return self._concat(parts)

    # -- one instruction ----------------------------------------------------------------------
    def _instruction(self, op: str, acc: ir.Value, a: ir.Value, b: ir.Value) -> ir.Value:
        n = ty.lanes_of(acc.type)
        if op in ("dp4a", "dp4a_u7"):
            name, vt = f"llvm.x86.avx512.vpdpbusd.{32 * n}", ir.VectorType(ir.IntType(8), 4 * n)
        else:
            # llvmlite has no bfloat type: the pairs travel as i32 (the form LLVM upgrades)
            name, vt = f"llvm.x86.avx512bf16.dpbf16ps.{32 * n}", ir.VectorType(ty.I32, n)
            a, b = self.b.bitcast(a, vt), self.b.bitcast(b, vt)
        fn = self.declare(name, ir.FunctionType(acc.type, [acc.type, vt, vt]))
        return self.b.call(fn, [acc, a, b])

    def _pmadd(self, acc: ir.Value, a: ir.Value, b: ir.Value) -> ir.Value:
        """``acc + pmaddwd(pmaddubsw(a, b), 1)``: exact for ``a < 128`` (module docstring)."""
        n = ty.lanes_of(acc.type)
        bytes_t, pairs_t = ir.VectorType(ir.IntType(8), 4 * n), ir.VectorType(ir.IntType(16), 2 * n)
        ubsw, wd = _PMADD[n]
        f_ubsw = self.declare(ubsw, ir.FunctionType(pairs_t, [bytes_t, bytes_t]))
        f_wd = self.declare(wd, ir.FunctionType(acc.type, [pairs_t, pairs_t]))
        pairs = self.b.call(f_ubsw, [a, b])
        return self.b.add(acc, self.b.call(f_wd, [pairs, ir.Constant(pairs_t, [1] * 2 * n)]))

    # -- portable -----------------------------------------------------------------------------
    def _portable(self, op: str, acc: ir.Value, a: ir.Value, b: ir.Value, n: int) -> ir.Value:
        m = ty.lanes_of(b.type)
        if op in ("dp4a", "dp4a_u7"):
            wide = ir.VectorType(ty.I32, m)
            prod = self.b.mul(self.b.zext(a, wide), self.b.sext(b, wide))
            total = self._pair_sum(self._pair_sum(prod, self.b.add), self.b.add)
            add = self.b.add
        else:
            fa, fb = self._bf16_to_f32(a), self._bf16_to_f32(b)
            total = self._pair_sum(self.b.fmul(fa, fb), self.b.fadd)
            add = self.b.fadd
        if n == 1:
            total = self.b.extract_element(total, ir.Constant(ty.I32, 0))
        return add(acc, total)

    def _bf16_to_f32(self, bits: ir.Value) -> ir.Value:
        """``uint16`` bits of bfloat16 -> float32: the bits moved to the top half."""
        n = ty.lanes_of(bits.type)
        wide = ir.VectorType(ty.I32, n) if n > 1 else ty.I32
        f32 = ir.VectorType(ir.FloatType(), n) if n > 1 else ir.FloatType()
        sixteen = ir.Constant(wide, [16] * n if n > 1 else 16)
        return self.b.bitcast(self.b.shl(self.b.zext(bits, wide), sixteen), f32)

    def _pair_sum(self, v: ir.Value, add: object) -> ir.Value:
        """``[v0 + v1, v2 + v3, ...]`` (half the lanes)."""
        half = ty.lanes_of(v.type) // 2
        even = self._pick(v, [2 * k for k in range(half)])
        odd = self._pick(v, [2 * k + 1 for k in range(half)])
        return add(even, odd)  # type: ignore[operator]

    def _pick(self, v: ir.Value, lanes: list[int]) -> ir.Value:
        mask = ir.Constant(ir.VectorType(ty.I32, len(lanes)), lanes)
        return self.b.shuffle_vector(v, ir.Constant(v.type, None), mask)

    def _lanes(self, v: ir.Value, start: int, count: int) -> ir.Value:
        if ty.lanes_of(v.type) == count:
            return v
        return self._pick(v, list(range(start, start + count)))

    def _concat(self, parts: list[ir.Value]) -> ir.Value:
        while len(parts) > 1:
            merged = []
            for x, y in zip(parts[::2], parts[1::2]):
                n = ty.lanes_of(x.type)
                mask = ir.Constant(ir.VectorType(ty.I32, 2 * n), list(range(2 * n)))
                merged.append(self.b.shuffle_vector(x, y, mask))
            parts = merged
        return parts[0]
