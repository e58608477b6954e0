"""Packed functions: Python callables that compiled code calls by name (TVM's ``register_func``).

    @mlc.register_func("my.addone")
    def addone(x, y):          # x, y: numpy views of the buffers (no copy)
        y[:] = x + 1

    B = te.extern(A.shape, [A],
                  lambda ins, outs: tir.call_packed("my.addone", ins[0], outs[0]), name="B")

How a call crosses from machine code into Python
------------------------------------------------

The LLVM backend turns ``call_packed("my.addone", A, B)`` into one call of the C function
``__mlc_call_packed(signature, values)``:

* ``signature`` is a constant C string written at compile time, ``"my.addone|b:float32:1|
  b:float32:1"``: the function's name, then one field per argument (``b:<dtype>:<ndim>`` a
  buffer, ``i`` an integer, ``f`` a float);
* ``values`` is an array of int64 slots filled at run time: a buffer takes its data pointer
  then its sizes, an integer its value, a float the bits of a double.

``__mlc_call_packed`` is :func:`_trampoline`, a ``ctypes`` callback whose address is given to
LLVM's symbol table (:func:`install`). It wraps each buffer in a numpy array over the same
memory, looks the name up in the registry and calls the function. An exception inside the
function does not unwind through machine code: it is kept in the record of the run
(:func:`begin_run`, :func:`end_run`), the trampoline returns ``-1`` and skips every later
packed call of the run, and the Module raises :class:`~mlc.errors.PackedFuncError` when the
call returns.

Each call of a module is a run with its own record, so two Python threads calling modules
at once never lose or take each other's error. A packed function called on the thread that
called the module belongs to that run; one called on a thread of a parallel loop belongs
to the run, if only one is going on, else (it cannot be told which) its error goes to
every run going on: one more run fails loudly rather than one succeeding with a partial
output.
"""

from __future__ import annotations

import ctypes
import difflib
import functools
import inspect
import struct
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from mlc.errors import PackedFuncError

SYMBOL = "__mlc_call_packed"

F = TypeVar("F", bound=Callable[..., Any])

_REGISTRY: dict[str, Callable[..., Any]] = {}
Pending = list[tuple[str, BaseException]]  # the exception a packed function raised in a run
_runs: dict[int, Pending] = {}  # the runs going on, by token
_mine = threading.local()  # .runs: the tokens of the runs started on this thread (nested last)
_lock = threading.Lock()  # parallel loops may call packed functions from several threads
_tokens = iter(range(1, 1 << 62))


# ---------------------------------------------------------------------------------------------
# the registry


def register_func(
    func_name: str | Callable[..., Any] | None = None,
    f: Callable[..., Any] | None = None,
    override: bool = False,
) -> Any:
    """Register ``f`` under ``func_name`` so that ``tir.call_packed(func_name, ...)`` calls it.

    As in TVM, three spellings::

        @mlc.register_func("my.addone")     # a name
        def addone(x, y): ...

        @mlc.register_func                  # the function's own name
        def addone(x, y): ...

        mlc.register_func("my.addone", addone)

    Buffers arrive as numpy arrays over the compiled code's memory (write an output with
    ``y[:] = ...``), integers as ``int``, floats as ``float``. The arrays are only valid
    during the call (an intermediate buffer is freed after it): copy what you keep.
    Registering a name twice needs ``override=True``."""
    if callable(func_name) and f is None:
        fn = func_name
        return register_func(fn.__name__, fn, override)
    if not isinstance(func_name, str) or not func_name:
        raise PackedFuncError(
            f"register_func needs a name (a non-empty string), got {func_name!r}"
        )
    name = func_name
    if "|" in name:  # the separator of the signature compiled code passes (see above)
        raise PackedFuncError(
            f"register_func({name!r}): a packed function's name cannot contain '|'; use "
            f"dots, as in {name.replace('|', '.')!r}"
        )

    def register(fn: F) -> F:
        if not callable(fn):
            raise PackedFuncError(f"register_func({name!r}): {fn!r} is not callable")
        if name in _REGISTRY and not override and _REGISTRY[name] is not fn:
            raise PackedFuncError(
                f"a packed function named {name!r} is already registered; pass "
                f"override=True to replace it"
            )
        _REGISTRY[name] = fn
        return fn

    if f is not None:
        return register(f)
    return register


def get_global_func(name: str, allow_missing: bool = False) -> Callable[..., Any] | None:
    """The function registered as ``name`` (``None`` with ``allow_missing``, else an error
    that lists the registered names closest to it)."""
    fn = _REGISTRY.get(name)
    if fn is None and not allow_missing:
        raise PackedFuncError(_unknown(name))
    return fn


def remove_global_func(name: str) -> None:
    """Forget the function registered as ``name``."""
    if _REGISTRY.pop(name, None) is None:
        raise PackedFuncError(_unknown(name))


def list_global_func_names() -> list[str]:
    """Every registered name, sorted."""
    return sorted(_REGISTRY)


def _unknown(name: str) -> str:
    close = difflib.get_close_matches(name, list(_REGISTRY), n=5, cutoff=0.6)
    prefix = name.rsplit(".", 1)[0] + "."
    close += [n for n in sorted(_REGISTRY) if n.startswith(prefix) and n not in close][:5]
    hint = f"; registered names close to it: {', '.join(close)}" if close else ""
    return (
        f"no packed function named {name!r} is registered{hint}. Register one with "
        f"@mlc.register_func({name!r})"
    )


def check_call(name: str, nargs: int) -> None:
    """Is ``name`` registered, and can it take ``nargs`` positional arguments? Called when a
    module is built, so that a typo fails before anything runs."""
    fn = get_global_func(name)
    try:
        sig = inspect.signature(fn)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return  # a builtin without a signature: checked when called
    try:
        sig.bind(*range(nargs))
    except TypeError as err:
        raise PackedFuncError(
            f"packed function {name!r} has signature {name}{sig} but the call passes {nargs} "
            f"argument{'s' if nargs != 1 else ''}: {err}"
        ) from None


# ---------------------------------------------------------------------------------------------
# the trampoline compiled code calls

_PACKED_CALL = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int64))


@functools.cache
def _parse(signature: bytes) -> tuple[str, tuple[Any, ...]]:
    """``b"name|b:float32:2|i|f"`` -> ``("name", (("float32", 2), "i", "f"))``."""
    name, *fields = signature.decode().split("|")
    kinds: list[Any] = []
    for field in fields:
        if field.startswith("b:"):
            _, dtype, ndim = field.split(":")
            kinds.append((dtype, int(ndim)))
        else:
            kinds.append(field)
    return name, tuple(kinds)


def _array(address: int, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    """A numpy array over ``shape`` elements at ``address`` (no copy)."""
    np_dtype = np.dtype("bool" if dtype == "bool" else dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * np_dtype.itemsize
    if nbytes == 0 or address == 0:
        return np.empty(shape, np_dtype)
    memory = (ctypes.c_char * nbytes).from_address(address)
    return np.frombuffer(memoryview(memory), dtype=np_dtype).reshape(shape)


def _unpack(kinds: tuple[Any, ...], values: Any) -> list[Any]:
    args: list[Any] = []
    k = 0
    for kind in kinds:
        if kind == "i":
            args.append(int(values[k]))
            k += 1
        elif kind == "f":
            args.append(struct.unpack("<d", struct.pack("<q", values[k]))[0])
            k += 1
        else:
            dtype, ndim = kind
            shape = tuple(int(values[k + 1 + d]) for d in range(ndim))
            args.append(_array(int(values[k]) & (2**64 - 1), dtype, shape))
            k += 1 + ndim
    return args


def _is_an_argument(result: np.ndarray, args: list[Any]) -> bool:
    """Is ``result`` (an array a packed function returned) the memory of one of its buffer
    arguments, as ``np.add(x, 1, out=y)`` returns ``y``?"""
    return any(isinstance(a, np.ndarray) and np.shares_memory(result, a) for a in args)


def _kept(name: str, k: int, a: np.ndarray) -> str:
    return (
        f"it kept its argument {k} (a {a.dtype} array of shape {a.shape}) after it "
        "returned, in a variable, a list or a view of it. That array is a window on the "
        "compiled code's memory, which is freed or reused once the call ends: reading it "
        "later gives garbage or ends the process. Keep a copy instead (x.copy()), and drop "
        "the reference you kept"
    )


def _records() -> list[Pending]:
    """The records of the run(s) a packed call on this thread belongs to."""
    mine = getattr(_mine, "runs", None)
    with _lock:
        if mine:
            return [_runs[mine[-1]]]
        return list(_runs.values())


def _trampoline(signature: bytes, values: Any) -> int:
    name = "?"
    records: list[Pending] = []
    try:
        records = _records()
        if any(records):  # an earlier call of this run failed: do nothing more
            return -1
        name, kinds = _parse(signature)
        fn = _REGISTRY.get(name)
        if fn is None:
            raise PackedFuncError(_unknown(name))
        args = _unpack(kinds, values)
        views = [(k, a) for k, a in enumerate(args) if isinstance(a, np.ndarray) and a.base
                 is not None]
        counts = [sys.getrefcount(a) for _, a in views]
        result = fn(*args)
        if isinstance(result, np.ndarray) and not _is_an_argument(result, args):
            shape = result.shape
            del result
            raise PackedFuncError(
                f"it returned an array of shape {shape}, but compiled code drops what a "
                "packed function returns: write the output into its buffer argument in "
                "place (y[:] = ...)")
        del result
        for (k, a), count in zip(views, counts):
            if sys.getrefcount(a) > count:
                a.flags.writeable = False  # at least a later write cannot corrupt memory
                raise PackedFuncError(_kept(name, k, a))
        return 0
    except BaseException as err:  # noqa: BLE001 - nothing may unwind into machine code
        with _lock:
            for pending in records:
                pending.append((name, err))
        return -1


_CALLBACK = _PACKED_CALL(_trampoline)  # kept alive for as long as the process runs


@functools.cache
def install() -> str:
    """Give LLVM the address of the trampoline under :data:`SYMBOL`; returns the symbol."""
    import llvmlite.binding as llvm

    llvm.add_symbol(SYMBOL, ctypes.cast(_CALLBACK, ctypes.c_void_p).value)
    return SYMBOL


def begin_run() -> int:
    """Open the record of a call of a module that calls packed functions; a token."""
    with _lock:
        token = next(_tokens)
        _runs[token] = []
    if not hasattr(_mine, "runs"):
        _mine.runs = []
    _mine.runs.append(token)
    return token


def end_run(token: int) -> None:
    """Close the record of run ``token`` and raise the exception a packed function raised
    in it, as a :class:`PackedFuncError` naming the function (nothing if none did)."""
    _mine.runs.remove(token)
    with _lock:
        pending = _runs.pop(token)
    if not pending:
        return
    name, err = pending[0]
    if isinstance(err, PackedFuncError):
        raise PackedFuncError(f"packed function {name!r}: {err}") from err
    raise PackedFuncError(
        f"packed function {name!r}, called from compiled code, raised "
        f"{type(err).__name__}: {err}. The outputs of this call are partial."
    ) from err


# ---------------------------------------------------------------------------------------------
# built-in packed functions


def _check_matmul(name: str, a: np.ndarray, b: np.ndarray, c: np.ndarray, batch: bool) -> None:
    rank = 3 if batch else 2
    for what, x in (("A", a), ("B", b), ("C", c)):
        if not isinstance(x, np.ndarray) or x.ndim != rank:
            got = f"{x.ndim}-D" if isinstance(x, np.ndarray) else type(x).__name__
            raise PackedFuncError(f"{name}: {what} must be a {rank}-D buffer, got {got}")
    if not a.dtype == b.dtype == c.dtype:
        raise PackedFuncError(
            f"{name}: A, B and C must have one dtype; got {a.dtype}, {b.dtype}, {c.dtype}"
        )


def _transpose(x: np.ndarray, flag: Any) -> np.ndarray:
    return np.swapaxes(x, -1, -2) if flag else x


def cblas_matmul(a: np.ndarray, b: np.ndarray, c: np.ndarray, transa: Any = False,
                 transb: Any = False) -> None:
    """``C = op(A) @ op(B)`` with numpy's BLAS, ``op`` transposing when ``transa``/``transb``
    (TVM's ``tvm.contrib.cblas.matmul``)."""
    name = "mlc.contrib.cblas.matmul"
    _check_matmul(name, a, b, c, batch=False)
    x, y = _transpose(a, transa), _transpose(b, transb)
    if x.shape[1] != y.shape[0] or c.shape != (x.shape[0], y.shape[1]):
        raise PackedFuncError(
            f"{name}: op(A) is {x.shape}, op(B) is {y.shape} and C is {c.shape}; need "
            f"(n, k) @ (k, m) -> (n, m)"
        )
    np.matmul(x, y, out=c)


def cblas_batch_matmul(a: np.ndarray, b: np.ndarray, c: np.ndarray, transa: Any = False,
                       transb: Any = False) -> None:
    """``C[i] = op(A[i]) @ op(B[i])`` (TVM's ``tvm.contrib.cblas.batch_matmul``)."""
    name = "mlc.contrib.cblas.batch_matmul"
    _check_matmul(name, a, b, c, batch=True)
    x, y = _transpose(a, transa), _transpose(b, transb)
    if (x.shape[0] != y.shape[0] or x.shape[2] != y.shape[1]
            or c.shape != (x.shape[0], x.shape[1], y.shape[2])):
        raise PackedFuncError(
            f"{name}: op(A) is {x.shape}, op(B) is {y.shape} and C is {c.shape}; need "
            f"(b, n, k) @ (b, k, m) -> (b, n, m)"
        )
    np.matmul(x, y, out=c)


for _prefix in ("mlc", "tvm"):  # tvm.*: TVM's tutorials run unchanged
    register_func(f"{_prefix}.contrib.cblas.matmul", cblas_matmul)
    register_func(f"{_prefix}.contrib.cblas.batch_matmul", cblas_batch_matmul)
