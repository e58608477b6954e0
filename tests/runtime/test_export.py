"""Export and load: a compiled module leaves the process as a library, comes back with the
same call and checks, and runs from a C program with no Python."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import mlc
from mlc import graph, te, tir
from mlc.errors import (
    ArgumentError,
    ExportError,
    IndexOutOfBoundsError,
    TargetError,
)
from mlc.runtime.export import elf_machine

ROOT = Path(__file__).resolve().parents[2]
needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc)")


def _scale(name: str = "myfunc", target: str = "llvm") -> mlc.runtime.Module:
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0 + 1.0, name="B")
    return mlc.build(te.create_schedule(B.op), [A, B], target, name=name)


def _mlp_graph(batch: int = 3) -> tuple[graph.Graph, list[tuple[np.ndarray, np.ndarray]]]:
    from mlc.examples.mlp import mlp_graph

    rng = np.random.default_rng(0)
    params = [(rng.standard_normal((32, 64)).astype("float32") * 0.2,
               rng.standard_normal(32).astype("float32")),
              (rng.standard_normal((10, 32)).astype("float32") * 0.2,
               rng.standard_normal(10).astype("float32"))]
    return mlp_graph(params, batch), params


def _numpy_mlp(x: np.ndarray, params: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    h = x
    for k, (w, b) in enumerate(params):
        h = h @ w.T + b
        if k < len(params) - 1:
            h = np.maximum(h, 0)
    e = np.exp(h - h.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@needs_cc
def test_export_library_and_load_module_call_the_same_way(tmp_path: Path) -> None:
    f = _scale()
    f.export_library(tmp_path / "myfunc.so")
    g = mlc.runtime.load_module(tmp_path / "myfunc.so")
    a = np.arange(7, dtype="float32")
    b = np.zeros(7, "float32")
    g(a, b)
    np.testing.assert_allclose(b, a * 2 + 1)
    assert g.signature() == f.signature()
    with pytest.raises(ArgumentError, match="'B' has shape"):
        g(a, np.zeros(6, "float32"))  # the symbolic n binds from A, as in the built module
    with pytest.raises(ArgumentError):
        g(a.astype("float64"), b)
    t = g.time_evaluator(g.entry_name, None, number=2, repeat=1)(a, b)
    assert t.mean > 0


@needs_cc
def test_save_object_then_load_links_it(tmp_path: Path) -> None:
    f = _scale()
    f.save(str(tmp_path / "myfunc.o"))
    assert elf_machine(tmp_path / "myfunc.o") == "x86_64" or elf_machine(
        tmp_path / "myfunc.o") is not None
    g = mlc.runtime.load_module(str(tmp_path / "myfunc.o"))
    a = np.linspace(-1, 1, 5, dtype="float32")
    b = np.zeros(5, "float32")
    g(a, b)
    np.testing.assert_allclose(b, a * 2 + 1)
    f.save(str(tmp_path / "myfunc.ll"))
    assert "mlc_run" in (tmp_path / "myfunc.ll").read_text()
    with pytest.raises(ExportError, match="cannot save as 'txt'"):
        f.save(str(tmp_path / "myfunc.txt"))


@needs_cc
def test_loaded_module_keeps_its_run_time_checks(tmp_path: Path) -> None:
    """An index read from data is checked when the loaded library runs too."""
    A = te.placeholder((8,), name="A")
    I = te.placeholder((4,), name="I", dtype="int32")
    B = te.compute((4,), lambda i: A[I[i]], name="B")
    f = mlc.build(te.create_schedule(B.op), [A, I, B], name="gather")
    f.export_library(tmp_path / "gather.so")
    g = mlc.runtime.load_module(tmp_path / "gather.so")
    a = np.arange(8, dtype="float32")
    out = np.zeros(4, "float32")
    g(a, np.array([7, 0, 3, 1], "int32"), out)
    np.testing.assert_array_equal(out, [7, 0, 3, 1])
    with pytest.raises(IndexOutOfBoundsError, match="the index was 9"):
        g(a, np.array([0, 9, 0, 0], "int32"), out)


@needs_cc
def test_scalar_parameters_survive_export(tmp_path: Path) -> None:
    A = te.placeholder((4,), name="A")
    alpha = te.var("alpha", "float32")
    B = te.compute((4,), lambda i: A[i] * alpha, name="B")
    f = mlc.build(te.create_schedule(B.op), [A, B, alpha], name="axpy")
    f.export_library(tmp_path / "axpy.so")
    g = mlc.runtime.load_module(tmp_path / "axpy.so")
    b = np.zeros(4, "float32")
    g(np.ones(4, "float32"), b, 2.5)
    np.testing.assert_allclose(b, 2.5)
    with pytest.raises(ArgumentError):
        g(np.ones(4, "float32"), b, "x")


@needs_cc
def test_graph_module_exports_with_its_weights(tmp_path: Path) -> None:
    g, params = _mlp_graph()
    mod = graph.build(graph.optimize(g))
    mod.export_library(tmp_path / "mlp.so")
    del mod
    loaded = mlc.runtime.load_module(tmp_path / "mlp.so")
    x = np.random.default_rng(1).random((3, 64)).astype("float32")
    np.testing.assert_allclose(loaded(x=x)[0], _numpy_mlp(x, params), rtol=1e-5, atol=1e-6)
    loaded.set_input("x", x)
    loaded.run()
    np.testing.assert_allclose(loaded.get_output(0), _numpy_mlp(x, params), rtol=1e-5,
                               atol=1e-6)
    mod2 = graph.build(graph.optimize(g))
    mod2.save(str(tmp_path / "mlp.o"))  # the object carries the weights too
    from_object = mlc.runtime.load_module(tmp_path / "mlp.o")
    np.testing.assert_allclose(from_object(x=x)[0], _numpy_mlp(x, params), rtol=1e-5,
                               atol=1e-6)
    with pytest.raises(ExportError, match="no input 'y'"):
        loaded.set_input(y=x)
    with pytest.raises(ExportError, match="shape"):
        loaded.set_input(x=x[:2])


C_PROGRAM = r"""
#include <stdio.h>
#include <string.h>
#include "mlc_runtime.h"

int main(void) {
    float x[3 * 64], y[3 * 10];
    for (int i = 0; i < 3 * 64; i++) x[i] = (float)((i * 37) % 101) / 101.0f;
    void *args[] = {x, y};
    if (strstr(mlc_metadata(), "\"kind\": \"graph\"") == NULL) return 3;
    int32_t err = mlc_run(args, NULL);
    if (err != 0) { printf("error %d\n", err); return 2; }
    for (int i = 0; i < 3 * 10; i++) printf("%.9g\n", y[i]);
    return 0;
}
"""


@needs_cc
def test_a_c_program_runs_an_exported_mlp(tmp_path: Path) -> None:
    """The whole point of deployment: no Python at run time."""
    g, params = _mlp_graph()
    graph.build(graph.optimize(g)).export_library(tmp_path / "libmlp.so")
    (tmp_path / "main.c").write_text(C_PROGRAM)
    subprocess.run(["cc", "main.c", "-I", str(ROOT / "include"), "-L.", "-lmlp",
                    "-Wl,-rpath,$ORIGIN", "-o", "main"], cwd=tmp_path, check=True)
    done = subprocess.run([str(tmp_path / "main")], capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin"}, check=True, timeout=60)
    got = np.array([float(v) for v in done.stdout.split()], "float32").reshape(3, 10)
    x = (np.arange(3 * 64) * 37 % 101).astype("float32").reshape(3, 64) / np.float32(101)
    np.testing.assert_allclose(got, _numpy_mlp(x, params), rtol=1e-5, atol=1e-6)


@needs_cc
def test_c_program_reads_the_check_code(tmp_path: Path) -> None:
    """mlc_run returns the failed check's number; the metadata says which it is."""
    A = te.placeholder((8,), name="A")
    I = te.placeholder((1,), name="I", dtype="int32")
    B = te.compute((1,), lambda i: A[I[i]], name="B")
    mlc.build(te.create_schedule(B.op), [A, I, B], name="gather").export_library(
        tmp_path / "libgather.so")
    (tmp_path / "main.c").write_text(r"""
#include <stdio.h>
#include "mlc_runtime.h"
int main(void) {
    float a[8] = {0}, b[1]; int idx[1] = {42};
    void *args[] = {a, idx, b};
    printf("%d\n", mlc_run(args, NULL));
    idx[0] = 3; a[3] = 5.0f;
    int32_t ok = mlc_run(args, NULL);
    printf("%d %g\n", ok, b[0]);
    return 0;
}""")
    subprocess.run(["cc", "main.c", "-I", str(ROOT / "include"), "-L.", "-lgather",
                    "-Wl,-rpath,$ORIGIN", "-o", "main"], cwd=tmp_path, check=True)
    out = subprocess.run([str(tmp_path / "main")], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out[0] != "0" and out[1:] == ["0", "5"]
    meta = json.loads(_metadata(tmp_path / "libgather.so"))
    assert meta["checks"][int(out[0]) - 1][0] == "index"


def _metadata(path: Path) -> str:
    import ctypes

    lib = ctypes.CDLL(str(path))
    lib.mlc_metadata.restype = ctypes.c_char_p
    return lib.mlc_metadata().decode()


# -- cross-compilation ---------------------------------------------------------------------------
@pytest.mark.parametrize("target, machine", [
    ("llvm -target=armv7l-none-linux-gnueabihf", "arm"),
    ("llvm -mtriple=aarch64-linux-gnu", "aarch64"),
    ("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72 -mattr=+neon", "aarch64"),
])
def test_cross_compiled_objects_are_for_their_machine(tmp_path: Path, target: str,
                                                      machine: str) -> None:
    n = 1024
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    _, xi = s[B].split(B.op.axis[0], factor=4)
    s[B].vectorize(xi)
    lib = mlc.build(s, [A, B], target, name="myfunc")
    lib.save(str(tmp_path / "myfunc.o"))
    head = (tmp_path / "myfunc.o").read_bytes()[:20]
    assert head[:4] == b"\x7fELF"
    assert int.from_bytes(head[18:20], "little") == {"arm": 40, "aarch64": 183}[machine]
    assert elf_machine(tmp_path / "myfunc.o") == machine
    asm = lib.get_source("asm")
    assert ("vadd.f32" in asm or "vadd" in asm) if machine == "arm" else "fadd" in asm
    with pytest.raises(TargetError, match=f"needs an? {machine} machine"):
        lib(np.zeros(n, "float32"), np.zeros(n, "float32"))
    with pytest.raises(TargetError, match=f"needs an? {machine} machine"):
        mlc.runtime.load_module(tmp_path / "myfunc.o")
    if shutil.which(f"{'aarch64-linux-gnu' if machine == 'aarch64' else 'arm-linux-gnueabihf'}"
                    "-gcc") is None:
        with pytest.raises(ExportError, match="apt install gcc-"):
            lib.export_library(tmp_path / "myfunc.so")


def test_target_strings_read_triples() -> None:
    from mlc.target import parse_target

    t = parse_target("llvm -target=armv7l-none-linux-gnueabihf")
    assert t.mtriple == "armv7l-none-linux-gnueabihf"
    assert parse_target(str(t)) == t
    assert parse_target({"kind": "llvm", "mtriple": "aarch64-linux-gnu"}).mtriple == \
        "aarch64-linux-gnu"
    with pytest.raises(TargetError, match="not a target triple"):
        parse_target("llvm -mtriple=aarch64")
    with pytest.raises(TargetError, match="twice"):
        parse_target("llvm -target=aarch64-linux-gnu -mtriple=armv7l-none-linux-gnueabihf")
    with pytest.raises(TargetError, match="cannot compile for the triple"):
        _scale(target="llvm -mtriple=nosuchcpu-linux-gnu")


@needs_cc
def test_host_triple_written_out_runs_here(tmp_path: Path) -> None:
    f = _scale(target="llvm -mtriple=x86_64-linux-gnu")
    a = np.ones(3, "float32")
    b = np.zeros(3, "float32")
    f(a, b)
    np.testing.assert_allclose(b, 3)


# -- hostile files -------------------------------------------------------------------------------
@needs_cc
def test_load_module_refuses_what_mlc_did_not_write(tmp_path: Path) -> None:
    with pytest.raises(ExportError, match="no library"):
        mlc.runtime.load_module(tmp_path / "missing.so")
    (tmp_path / "junk.so").write_bytes(b"not a library at all")
    with pytest.raises(ExportError, match="cannot load"):
        mlc.runtime.load_module(tmp_path / "junk.so")
    (tmp_path / "other.c").write_text("int f(void) { return 1; }\n")
    subprocess.run(["cc", "-shared", "-fPIC", "other.c", "-o", "other.so"], cwd=tmp_path,
                   check=True)
    with pytest.raises(ExportError, match="not one mlc exported"):
        mlc.runtime.load_module(tmp_path / "other.so")
    (tmp_path / "bad.c").write_text('const char *mlc_metadata(void) { return "{nope"; }\n')
    subprocess.run(["cc", "-shared", "-fPIC", "bad.c", "-o", "bad.so"], cwd=tmp_path,
                   check=True)
    with pytest.raises(ExportError, match="not valid JSON"):
        mlc.runtime.load_module(tmp_path / "bad.so")
    (tmp_path / "old.c").write_text(
        'const char *mlc_metadata(void) { return "{\\"format\\": \\"mlc-library\\", '
        '\\"version\\": 99}"; }\n')
    subprocess.run(["cc", "-shared", "-fPIC", "old.c", "-o", "old.so"], cwd=tmp_path,
                   check=True)
    with pytest.raises(ExportError, match="another version"):
        mlc.runtime.load_module(tmp_path / "old.so")


@pytest.mark.parametrize("described", [
    "",                                                     # no signature, no function
    ', \\"signature\\": 7, \\"public\\": \\"f\\"',            # not a signature
    ', \\"signature\\": ' + "[" * 5000 + "]" * 5000 + ', \\"public\\": \\"f\\"',  # deep
])
def test_a_tampered_call_description_is_refused(tmp_path: Path, described: str) -> None:
    """A library whose metadata says it is mlc's but does not describe a call raised
    KeyError, TypeError or RecursionError from inside load_module."""
    (tmp_path / "t.c").write_text(
        'const char *mlc_metadata(void) { return "{\\"format\\": \\"mlc-library\\", '
        f'\\"version\\": 1{described}}}"; }}\n')
    subprocess.run(["cc", "-shared", "-fPIC", "t.c", "-o", "t.so"], cwd=tmp_path, check=True)
    with pytest.raises(ExportError, match="does not describe a call|not valid JSON"):
        mlc.runtime.load_module(tmp_path / "t.so")


def test_packed_calls_cannot_be_exported(tmp_path: Path) -> None:
    A = te.placeholder((4,), name="A")
    mlc.register_func("test_export.double", override=True)(lambda a, b: b.__setitem__(
        slice(None), a * 2))
    B = te.extern((4,), [A], lambda ins, outs: tir.call_packed(
        "test_export.double", ins[0], outs[0]), name="B")
    f = mlc.build(te.create_schedule(B.op), [A, B], name="packed")
    with pytest.raises(ExportError, match="packed functions"):
        f.export_library(tmp_path / "p.so")


def test_missing_compiler_is_a_typed_error(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CC", raising=False)
    with pytest.raises(ExportError, match="apt install gcc"):
        _scale().export_library(tmp_path / "x.so")
    _scale().save(str(tmp_path / "x.o"))  # an object needs no compiler
    assert elf_machine(tmp_path / "x.o") == "x86_64"


@needs_cc
def test_a_library_exported_again_under_the_same_name_loads_the_new_code(
        tmp_path: Path) -> None:
    """The dynamic loader caches libraries by path: a notebook cell that exports and loads
    twice must get the second program, not the first."""
    A = te.placeholder((4,), name="A")
    for scale in (2.0, 3.0):
        B = te.compute((4,), lambda i, scale=scale: A[i] * scale, name="B")
        mlc.build(te.create_schedule(B.op), [A, B], name="myfunc").export_library(
            tmp_path / "same.so")
        g = mlc.runtime.load_module(tmp_path / "same.so")
        b = np.zeros(4, "float32")
        g(np.ones(4, "float32"), b)
        np.testing.assert_allclose(b, scale)


@needs_cc
def test_two_libraries_with_one_entry_name_stay_apart(tmp_path: Path) -> None:
    A = te.placeholder((4,), name="A")
    mods = []
    for k, scale in enumerate((2.0, 5.0)):
        B = te.compute((4,), lambda i, scale=scale: A[i] * scale, name="B")
        mlc.build(te.create_schedule(B.op), [A, B], name="myfunc").export_library(
            tmp_path / f"lib{k}.so")
        mods.append(mlc.runtime.load_module(tmp_path / f"lib{k}.so"))
    for g, scale in zip(mods, (2.0, 5.0)):
        b = np.zeros(4, "float32")
        g(np.ones(4, "float32"), b)
        np.testing.assert_allclose(b, scale)


@needs_cc
def test_parallel_loops_export_with_libgomp(tmp_path: Path) -> None:
    n = 1 << 14
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 3.0, name="B")
    s = te.create_schedule(B.op)
    xo, _ = s[B].split(B.op.axis[0], factor=1024)
    s[B].parallel(xo)
    mlc.build(s, [A, B], name="par").export_library(tmp_path / "par.so")
    g = mlc.runtime.load_module(tmp_path / "par.so")
    a = np.random.default_rng(0).random(n, dtype=np.float32)
    b = np.zeros_like(a)
    g(a, b)
    np.testing.assert_allclose(b, a * 3)


@needs_cc
def test_null_arrays_to_mlc_run_are_refused_and_bad_paths_are_typed(tmp_path: Path) -> None:
    import ctypes

    _scale().export_library(tmp_path / "sym.so")  # a symbolic size n: sizes are needed
    lib = ctypes.CDLL(str(tmp_path / "sym.so"))
    lib.mlc_run.restype = ctypes.c_int32
    lib.mlc_run.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    a = np.ones(3, "float32")
    b = np.zeros(3, "float32")
    args = (ctypes.c_void_p * 2)(a.ctypes.data, b.ctypes.data)
    assert lib.mlc_run(None, None) == -1
    assert lib.mlc_run(args, None) == -1  # NULL sizes where n is needed: no crash
    sizes = (ctypes.c_int64 * 1)(3)
    assert lib.mlc_run(args, sizes) == 0
    np.testing.assert_allclose(b, 3.0)
    g = mlc.runtime.load_module(tmp_path / "sym.so")
    with pytest.raises(ExportError, match="machine code only"):
        g.get_source("ll")
    with pytest.raises(ExportError, match="no IR"):
        g.export_library(tmp_path / "again.so")
    with pytest.raises(ExportError, match="cannot write"):
        _scale().save(str(tmp_path))  # a folder
    with pytest.raises(ExportError, match="linker failed"):
        _scale().export_library(tmp_path / "no" / "such" / "dir" / "x.so")


def test_gpu_modules_say_they_do_not_export(tmp_path: Path) -> None:
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=32)
    s[B].bind(xo, te.thread_axis("blockIdx.x"))
    s[B].bind(xi, te.thread_axis("threadIdx.x"))
    f = mlc.build(s, [A, B], "cuda-sim")
    with pytest.raises(ExportError, match="only CPU modules"):
        f.export_library(tmp_path / "gpu.so")


@needs_cc
def test_shapes_with_size_expressions_survive_export(tmp_path: Path) -> None:
    n = te.var("n")
    A = te.placeholder((n, 4), name="A")
    B = te.compute((n * 4,), lambda i: A[i // 4, i % 4] + 1.0, name="B")
    f = mlc.build(te.create_schedule(B.op), [A, B], name="flat")
    f.export_library(tmp_path / "flat.so")
    g = mlc.runtime.load_module(tmp_path / "flat.so")
    a = np.arange(12, dtype="float32").reshape(3, 4)
    b = np.zeros(12, "float32")
    g(a, b)
    np.testing.assert_allclose(b, a.ravel() + 1)
    with pytest.raises(ArgumentError):
        g(a, np.zeros(11, "float32"))
    assert g.signature() == f.signature()


@needs_cc
def test_library_for_a_cpu_with_more_features_is_refused_on_load(tmp_path: Path) -> None:
    """Built with a feature this CPU lacks (AMD's sse4a on an Intel host, or any feature on
    another machine), the library would die of an illegal instruction: load refuses it."""
    import llvmlite.binding as llvm

    from mlc.runtime import jit

    jit._initialize()
    here = {k for k, on in llvm.get_host_cpu_features().items() if on}
    foreign = next((f for f in ("sse4a", "xop", "fma4", "tbm") if f not in here), None)
    if foreign is None:
        pytest.skip("this CPU has every feature the test could use")
    f = _scale(target=f"llvm -mattr=+{foreign}")
    f.export_library(tmp_path / "foreign.so")
    with pytest.raises(TargetError, match=f"compiled for a CPU with {foreign}"):
        mlc.runtime.load_module(tmp_path / "foreign.so")
    _scale().export_library(tmp_path / "here.so")  # the host's own features load fine
    mlc.runtime.load_module(tmp_path / "here.so")
