# %% [markdown]
# # 11 · Deployment: a model as a shared library, a C program, another machine
#
# The lecture notes (seeds 000 and 004) give deployment as the reason ML compilers exist: a
# model is developed in Python and used where Python is not, on a phone, a camera, a
# server's GPU. The goals they list are integration with few dependencies, the hardware's
# own acceleration, and speed. This chapter takes the compiled MLP of chapter 06 out of
# Python: a shared library that a small C program calls, an object file for an ARM board
# built on this x86 machine, and a module run on a "remote device" (a worker process here).
#
# **You will:** export a built model with its weights, load it back and call it from C
# without Python; cross-compile for AArch64 and see why it cannot run here; and run a
# kernel on a remote device through an RPC session, as the notes' "program your phone from
# your laptop". There is nothing to write in this chapter (`docs/deployment.md` has more).

# %%
import mlc  # first: a folder named "mlc" where Jupyter started would hide the package

if not hasattr(mlc, "build"):
    raise ImportError(f"'import mlc' found the folder {list(mlc.__path__)[0]}, not the mlc "
                      "package: start Jupyter from another folder (`make lab` in the "
                      "checkout does), or rename that folder")

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from mlc import graph, te
from mlc.errors import TargetError
from mlc.examples import mlp
from mlc.runtime.export import elf_machine

WORK = Path(tempfile.mkdtemp(prefix="mlc_deploy_"))  # every file of this chapter goes here

# %% [markdown]
# **Why:** a compiled model is only useful where it runs. A shared library with a two-call
# C interface runs wherever a C program does, with no interpreter, no framework and no
# compiler on the device.
#
# Where this chapter works, on the map of chapter 00 (its levels in blue):

# %% tags=["nbval-ignore-output"]
from mlc.viz.concepts import stack

stack(chapter=11)

# %% [markdown]
# ## Export a model, load it back
# Chapter 06's MLP, trained with numpy and built for this CPU at batch 1. `export_library`
# compiles the whole graph, kernels and weights, into one shared library (LLVM makes the
# object code, the system's `cc` links it); `mlc.runtime.load_module` loads it into Python
# again, with the same argument checks as the built module.

# %%
x_train, y_train, x_test, y_test = mlp.load_data(seed=0)
params = mlp.train_mlp(x_train, y_train, epochs=20, seed=0)
mod = graph.build(graph.optimize(mlp.mlp_graph(params, batch=1)), target="llvm")
lib_path = WORK / "libmlp.so"
mod.export_library(lib_path)
print(f"{lib_path.name}: an ELF shared library for {elf_machine(lib_path)}")

loaded = mlc.runtime.load_module(lib_path)
x0 = x_test[:1]
probs = loaded(x=x0)[0]
np.testing.assert_allclose(probs, mod(x=x0)[0], rtol=1e-6)
np.testing.assert_allclose(probs, mlp.numpy_forward(params, x0), rtol=1e-3, atol=1e-5)
print("the loaded library computes what the built module and numpy compute; class",
      int(probs.argmax()), "for a digit labelled", int(y_test[0]))

# %% [markdown]
# ## A C program, no Python
# Every exported library defines the C interface of `include/mlc_runtime.h`:
# `mlc_metadata()`, a JSON string naming each argument with its dtype and shape, and
# `mlc_run(args, sizes)`, one pointer per argument (the graph's inputs, then its outputs;
# the weights are inside). The program below reads 64 pixels from a file, runs the model
# and prints the 10 probabilities. It is compiled with `cc` and runs as its own process.

# %% tags=["nbval-ignore-output"]
main_c = r"""
#include <stdio.h>
#include "mlc_runtime.h"

int main(int argc, char **argv) {
    float x[64], y[10];
    FILE *f = fopen(argv[1], "rb");
    if (!f || fread(x, sizeof(float), 64, f) != 64) return 2;
    fclose(f);
    void *args[] = {x, y};
    int32_t err = mlc_run(args, NULL);
    if (err != 0) return 1;
    for (int i = 0; i < 10; i++) printf("%.6f\n", y[i]);
    return 0;
}
"""
(WORK / "main.c").write_text(main_c)
include = Path(mlc.__file__).resolve().parents[1] / "include"
cc = shutil.which("cc") or shutil.which("gcc")
build_cmd = [cc, "main.c", "-I", str(include), "-L.", "-lmlp", "-Wl,-rpath,$ORIGIN",
             "-o", "main"]
subprocess.run(build_cmd, cwd=WORK, check=True)
x0.astype("float32").tofile(WORK / "digit.bin")
run = subprocess.run([str(WORK / "main"), "digit.bin"], cwd=WORK, capture_output=True,
                     text=True, check=True)
from_c = np.array([float(v) for v in run.stdout.split()], dtype="float32")
print("cc " + " ".join(build_cmd[1:]).replace(str(include), "<the checkout>/include"))
print("./main digit.bin ->", np.round(from_c, 4))
np.testing.assert_allclose(from_c, probs[0], rtol=1e-5, atol=1e-6)
print("the C program, with no Python in its process, prints the same probabilities")

# %% [markdown]
# The metadata is how a program that did not build the library learns how to call it:

# %%
import ctypes
import json

so = ctypes.CDLL(str(lib_path))
so.mlc_metadata.restype = ctypes.c_char_p
meta = json.loads(so.mlc_metadata())
for arg in meta["signature"]["arguments"]:
    print(f"{arg['buffer']:8s} {arg['dtype']} {arg['shape']}"
          + ("  (written)" if arg.get("written") else ""))

# %% [markdown]
# ## Cross-compilation: code for a machine you are not on
# The target string names the machine, TVM's way (`-mtriple`, `-mcpu`) or the notes'
# (`-target=`). LLVM has every back end built in, so this x86 machine makes AArch64 code
# for a Raspberry Pi 4's Cortex-A72: an ELF object with NEON vector instructions (`fadd` on
# `v` registers, 4 floats each: `A[i] * 2` became `A[i] + A[i]`). Running it here is
# refused by name, not crashed.

# %%
n = te.var("n")
A = te.placeholder((n,), name="A")
B = te.compute((n,), lambda i: A[i] * 2.0 + 1.0, name="B")
s = te.create_schedule(B.op)
xo, xi = s[B].split(B.op.axis[0], factor=4)
s[B].vectorize(xi)
arm = mlc.build(s, [A, B], "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72", name="myfunc")
arm.save(WORK / "myfunc_a64.o")
print("myfunc_a64.o is an ELF object for", elf_machine(WORK / "myfunc_a64.o"))
asm = arm.get_source("asm")
assert "fadd\tv" in asm and ".4s" in asm  # NEON: 4 lanes of float32
assert re.search(r"fadd\tv(\d+)\.4s, v\1\.4s, v\1\.4s", asm)  # A[i] * 2 as A[i] + A[i]
try:
    arm(np.zeros(8, "float32"), np.zeros(8, "float32"))
except TargetError as err:
    print("TargetError:", str(err).split(":")[0])

# %% tags=["nbval-ignore-output"]
print("\n".join(line for line in asm.splitlines() if "\tv" in line or "q2" in line))

# %% [markdown]
# Linking that object into a `.so` needs the other machine's linker
# (`apt install gcc-aarch64-linux-gnu`), or the device's own `cc`: copy `myfunc_a64.o`
# there, or let the device link it, as the next section does.
#
# ## A remote device
# The notes' workflow: build on the laptop, upload to the device, load and time it there,
# with the arrays living on the device. The RPC server is a Dask worker (`dask worker
# tcp://HOST:8786` on the device); `mlc.rpc.connect("local:1")` starts one worker process on
# this machine to stand in for it (a few seconds). Code for another machine loads only on a
# worker of that machine, so here the module is built for this CPU.

# %% tags=["nbval-ignore-output"]
remote = mlc.rpc.connect("local:1")
host = mlc.build(s, [A, B], "llvm", name="myfunc")
host.save(WORK / "myfunc.o")
remote.upload(WORK / "myfunc.o")
rfunc = remote.load_module("myfunc.o")              # the worker links it with its cc
ctx = remote.cpu(0)
a = mlc.nd.array(np.arange(1024, dtype="float32"), ctx)
b = mlc.nd.array(np.zeros(1024, dtype="float32"), ctx)
rfunc(a, b)
np.testing.assert_allclose(b.asnumpy(), np.arange(1024) * 2.0 + 1.0)
timer = rfunc.time_evaluator("myfunc", ctx, number=10)
print(f"on the device: {timer(a, b).mean * 1e6:.1f} us per call; result checked")
remote.close()

# %% [markdown]
# > **What to remember**
# > * `export_library` puts a compiled model, weights included, into one shared library;
# >   `mlc_run(args, sizes)` of `include/mlc_runtime.h` calls it from C with no Python.
# > * The target string picks the machine: one x86 laptop makes code for ARM boards, and
# >   code for another machine is refused here by name.
# > * An RPC session builds here, runs and times there: the measurements of chapter 07 can
# >   come from the device itself.

# %%
shutil.rmtree(WORK, ignore_errors=True)
assert not os.path.exists(WORK)
