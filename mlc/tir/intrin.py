"""The intrinsic table: every function a ``Call`` node may name, with all of its forms.

A ``Call(dtype, "exp", (x,))`` means the same thing everywhere: ``te.exp`` builds it, the
reference evaluator and the interpreter run its numpy form, and each code generator prints its
own form. This table is the only list of those names, so adding a function is one row here::

    name       numpy form            LLVM form                C / CUDA form
    exp        np.exp                llvm.exp.f32 (vectors)   exp{f}(x)   (expf for float32)
    tanh       np.tanh               libm tanhf, per lane     tanh{f}(x)
    sigmoid    1 / (1 + np.exp(-x))  expanded: 1/(1+exp(-x))  (1.0f / (1.0f + expf(-x)))

C and CUDA templates: ``{0}``, ``{1}``... are the printed arguments, ``{f}`` is ``"f"`` for
float32 and float16 (``expf``) and empty for float64 (``exp``), ``{one}`` is ``1.0f`` or ``1.0``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from mlc.tir import dtype as dt

LLVMForm = Literal["intrinsic", "libm", "expanded", "codegen", "dot"]


@dataclass(frozen=True)
class Intrinsic:
    """One function a ``Call`` node may name.

    ``llvm`` says how the LLVM backend emits it: ``"intrinsic"`` (``llvm.<llvm_name>.f32``; LLVM
    picks an instruction such as ``vsqrtps`` or a libm call), ``"libm"`` (the C library's
    function, one vector lane at a time), ``"expanded"`` (written with other intrinsics) or
    ``"codegen"`` (the code generator handles the name itself: a hint, a runtime call) or
    ``"dot"`` (a low-precision dot product: one instruction where the CPU has it, ``llvm_name``
    such as ``x86.avx512.vpdpbusd``, portable widening multiply-adds elsewhere).
    ``c`` is the C template, ``cuda`` the CUDA one (``None``: the same as C). ``float_only``:
    the arguments must be floats (``abs`` also takes integers, printed with ``c_int``).
    ``llvm_name``: the LLVM intrinsic when it is not named like the function (``nearbyint``
    means numpy's ties-to-even whatever the rounding mode: ``llvm.roundeven``)."""

    name: str
    arity: int
    numpy: Callable[..., Any]
    llvm: LLVMForm
    c: str
    cuda: str | None = None
    float_only: bool = True
    c_int: str | None = None
    doc: str = ""
    llvm_name: str | None = None

    def source(self, language: Literal["c", "cuda"], args: list[str], dtype: str) -> str:
        """The call in C or CUDA source (the ``c`` or ``cuda`` column), ``args`` printed."""
        if self.c_int is not None and not dt.is_float(dtype):
            template = self.c_int
        else:
            template = {"c": self.c, "cuda": self.cuda or self.c}[language]
        single = dt.element(dtype) in ("float32", "float16")
        return template.format(*args, f="f" if single else "", one="1.0f" if single else "1.0")


def _erf(x: Any) -> Any:
    a = np.asarray(x)
    return np.vectorize(math.erf, otypes=[a.dtype])(a) if a.ndim else a.dtype.type(math.erf(a))


def _round_half_away(x: Any) -> Any:
    a = np.asarray(x)
    t = np.trunc(a)  # a - t is exact: no |x| + 0.5 that rounds 0.49999997 up to 1
    return np.where(np.abs(a - t) >= 0.5, t + np.sign(a), t).astype(a.dtype)


def _dp4a(acc: Any, a: Any, b: Any) -> Any:
    """Per int32 lane ``j``: ``acc[j] + sum(a[4j + g] * b[4j + g] for g in range(4))``, ``a``
    unsigned and ``b`` signed bytes (4 bytes of ``a`` alone: the same 4 for every lane)."""
    acc = np.asarray(acc, dtype=np.int32)
    a8 = np.asarray(a).astype(np.uint8).astype(np.int32).reshape(-1, 4)
    b8 = np.asarray(b).astype(np.int8).astype(np.int32).reshape(-1, 4)
    return (acc + (a8 * b8).sum(axis=1, dtype=np.int32).reshape(acc.shape)).astype(np.int32)


def _bf16_to_f32(bits: Any) -> Any:
    return (np.asarray(bits).astype(np.uint32) << 16).view(np.float32)


def _dp2a_bf16(acc: Any, a: Any, b: Any) -> Any:
    """Per float32 lane ``j``: ``acc[j] + a[2j] * b[2j] + a[2j + 1] * b[2j + 1]`` on bfloat16
    values stored as their ``uint16`` bits (2 values of ``a`` alone: the same pair per lane)."""
    acc = np.asarray(acc, dtype=np.float32)
    fa = _bf16_to_f32(a).reshape(-1, 2)
    fb = _bf16_to_f32(b).reshape(-1, 2)
    return (acc + (fa * fb).sum(axis=1).reshape(acc.shape)).astype(np.float32)


def _shuffle_down_one_lane(mask: Any, value: Any, offset: Any, width: Any) -> Any:
    """A warp shuffle seen from a lone thread (no other lane to read): its own value. The
    GPU interpreter (mlc.target.cuda_sim) runs the real, lane-synchronous form."""
    return value


def _no_reference(name: str) -> Callable[..., Any]:
    """The numpy form of a call out of the program: there is none (it runs foreign code)."""

    def refuse(*args: Any) -> Any:
        raise NotImplementedError(
            f"{name} calls code outside the program; it has no numpy form. Build the "
            "function (mlc.build) and run it instead"
        )

    return refuse


_C_TYPES = {"float32": ctypes.c_float, "float64": ctypes.c_double, "int32": ctypes.c_int32,
            "int64": ctypes.c_int64, "int8": ctypes.c_int8, "uint8": ctypes.c_uint8}


def _c_function(name: Any, *args: Any) -> Any:
    """The numpy form of ``call_pure_extern(dtype, name, *args)``: the process's C function
    ``name`` (libm's ``expf``...) through ctypes, element by element. Its result is taken to
    be of the first argument's type, as for the math functions."""
    arrays = [np.asarray(a) for a in args]
    types = [_C_TYPES.get(str(a.dtype)) for a in arrays]
    if not arrays or any(t is None for t in types):
        raise NotImplementedError(f"{name}: no numpy form for arguments {arrays}")
    lib = ctypes.CDLL(ctypes.util.find_library("m") or None)
    fn = getattr(lib, str(name))  # libm, then what the process has loaded
    fn.argtypes, fn.restype = types, types[0]
    out = np.vectorize(lambda *xs: fn(*xs), otypes=[arrays[0].dtype])(*arrays)
    return out if out.ndim else arrays[0].dtype.type(out)


def _fn(name: str, numpy: Callable[..., Any], llvm: LLVMForm, doc: str, arity: int = 1,
        **kw: Any) -> Intrinsic:
    """A plain C function call: ``exp{f}(x)``, ``pow{f}(x, y)``."""
    args = ", ".join(f"{{{k}}}" for k in range(arity))
    return Intrinsic(name, arity, numpy, llvm, f"{name}{{f}}({args})", doc=doc, **kw)


_TABLE = [
    _fn("exp", np.exp, "intrinsic", "e ** x"),
    _fn("exp2", np.exp2, "intrinsic", "2 ** x"),
    _fn("log", np.log, "intrinsic", "natural logarithm"),
    _fn("log2", np.log2, "intrinsic", "base-2 logarithm"),
    _fn("log10", np.log10, "intrinsic", "base-10 logarithm"),
    _fn("sqrt", np.sqrt, "intrinsic", "square root"),
    _fn("fabs", np.abs, "intrinsic", "|x| of a float"),
    _fn("floor", np.floor, "intrinsic", "largest integer <= x (as a float)"),
    _fn("ceil", np.ceil, "intrinsic", "smallest integer >= x (as a float)"),
    _fn("trunc", np.trunc, "intrinsic", "x rounded toward zero (as a float)"),
    _fn("round", _round_half_away, "intrinsic",
        "nearest integer, ties away from zero as C's round() and TVM's (np.round rounds ties "
        "to even: that is nearbyint)"),
    Intrinsic("nearbyint", 1, np.round, "intrinsic", "nearbyint{f}({0})",
              llvm_name="roundeven", doc="nearest integer, ties to even (as a float)"),
    _fn("sin", np.sin, "intrinsic", "sine"),
    _fn("cos", np.cos, "intrinsic", "cosine"),
    _fn("pow", np.power, "intrinsic", "x ** y", arity=2),
    _fn("fma", lambda a, b, c: a * b + c, "intrinsic", "a * b + c, rounded once", arity=3),
    _fn("tanh", np.tanh, "libm", "hyperbolic tangent"),
    _fn("erf", _erf, "libm", "the error function"),
    _fn("log1p", np.log1p, "libm", "log(1 + x), exact for small x"),
    _fn("expm1", np.expm1, "libm", "exp(x) - 1, exact for small x"),
    _fn("tan", np.tan, "libm", "tangent"),
    _fn("atan", np.arctan, "libm", "arc tangent"),
    Intrinsic("sigmoid", 1, lambda x: 1 / (1 + np.exp(-x)), "expanded",
              "({one} / ({one} + exp{f}(-{0})))", doc="1 / (1 + exp(-x))"),
    Intrinsic("rsqrt", 1, lambda x: 1 / np.sqrt(x), "expanded", "({one} / sqrt{f}({0}))",
              doc="1 / sqrt(x)"),
    Intrinsic("abs", 1, np.abs, "expanded", "fabs{f}({0})", float_only=False,
              c_int="(({0}) < 0 ? -({0}) : ({0}))", doc="|x|: fabs on floats, a select on ints"),
    # low-precision dot products (mlc.topi.x86.dense_int8): the notation of CUDA's __dp4a
    Intrinsic("dp4a", 3, _dp4a, "dot", "mlc_dp4a({0}, {1}, {2})", float_only=False,
              llvm_name="x86.avx512.vpdpbusd",
              doc="int32 lanes += 4 products of u8 x s8 bytes each (AVX-512 VNNI vpdpbusd)"),
    Intrinsic("dp4a_u7", 3, _dp4a, "dot", "mlc_dp4a_u7({0}, {1}, {2})", float_only=False,
              llvm_name="x86.avx2.pmadd.ub.sw",
              doc="dp4a whose unsigned bytes are 7-bit (0..127): vpdpbusd on VNNI, else exact "
                  "as AVX2 vpmaddubsw + vpmaddwd (127 * 127 * 2 < 32767: no int16 saturation)"),
    Intrinsic("dp2a_bf16", 3, _dp2a_bf16, "dot", "mlc_dp2a_bf16({0}, {1}, {2})",
              float_only=False, llvm_name="x86.avx512bf16.dpbf16ps",
              doc="float32 lanes += 2 products of bfloat16 pairs each (AVX512_BF16 vdpbf16ps)"),
    Intrinsic("bf16_to_f32", 1, _bf16_to_f32, "dot", "mlc_bf16_to_f32({0})", float_only=False,
              doc="the float32 a bfloat16 stands for, from its uint16 bits (bits << 16)"),
    # names the code generators handle themselves
    Intrinsic("likely", 1, lambda x: x, "codegen", "{0}", float_only=False,
              doc="a branch hint: the condition itself"),
    Intrinsic("omp_get_thread_num", 0, lambda: 0, "codegen", "omp_get_thread_num()",
              float_only=False, doc="the OpenMP thread running a parallel loop (0 in numpy)"),
    # a GPU warp's lanes read each other's registers (mlc.transform.lower_cross_thread_reduction)
    Intrinsic("tvm_warp_shuffle_down", 4, _shuffle_down_one_lane, "codegen",
              "__shfl_down_sync({0}, {1}, {2}, {3})", float_only=False,
              doc="tvm_warp_shuffle_down(mask, value, offset, width): the value of the lane "
                  "offset places down within each group of width lanes (its own value past "
                  "the group's end); every lane in mask must reach it together. Only GPU "
                  "targets run it (cuda-sim executes it lane-synchronously)"),
    Intrinsic("check_index", 3, lambda i, n, what: i, "codegen", "{0}", float_only=False,
              doc="check_index(i, n, what): the index i of one dimension of size n, checked "
                  "0 <= i < n when the function runs (LLVM; flatten_buffers adds it)"),
    # calls out of the program (mlc.tir.call): a variable number of arguments (arity -1),
    # the first one the function's name
    Intrinsic("call_packed", -1, _no_reference("call_packed"), "codegen", "", float_only=False,
              doc="call_packed(name, *args): the Python function registered as name "
                  "(mlc.register_func); buffers become numpy arrays"),
    Intrinsic("call_pure_extern", -1, _c_function, "codegen", "",
              float_only=False, doc="call_pure_extern(name, *args): the C function name, "
                                    "without side effects (libm's expf...)"),
    Intrinsic("call_extern", -1, _c_function, "codegen", "",
              float_only=False, doc="call_extern(name, *args): the C function name"),
    Intrinsic("buffer_arg", -1, _no_reference("buffer_arg"), "codegen", "", float_only=False,
              doc="buffer_arg(A[0, 0], n, m): buffer A (its address and sizes) as an argument "
                  "of call_packed"),
]  # fmt: skip

INTRINSICS: dict[str, Intrinsic] = {i.name: i for i in _TABLE}


def lookup(name: str) -> Intrinsic | None:
    """The table's row for ``name`` (``None`` for a name it does not know)."""
    return INTRINSICS.get(name)


def names(llvm: LLVMForm | None = None) -> list[str]:
    """The known names, sorted (only those with LLVM form ``llvm`` when given)."""
    return sorted(n for n, i in INTRINSICS.items() if llvm is None or i.llvm == llvm)


# The rows whose result is not of the first argument's dtype: an argument's position or a
# dtype. (A dot product's result is its accumulator's, the first argument: dp4a(acc, a, b).)
_RESULT: dict[str, int | str] = {
    "bf16_to_f32": "float32", "omp_get_thread_num": "int32", "tvm_warp_shuffle_down": 1,
}  # fmt: skip


def result_dtype(name: str, arg_dtypes: list[str]) -> str:
    """The dtype of ``Call(dtype, name, args)`` given its arguments' dtypes: the first
    argument's (``exp(x)`` is of ``x``'s dtype), except for the rows named in ``_RESULT``;
    vector arguments give a vector result of as many lanes."""
    rule = _RESULT.get(name, 0)
    if isinstance(rule, int):
        return arg_dtypes[rule] if len(arg_dtypes) > rule else "int32"
    lanes = dt.lanes(arg_dtypes[0]) if arg_dtypes else 1
    return dt.with_lanes(rule, lanes) if lanes > 1 else rule
