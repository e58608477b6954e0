# %% [markdown]
# # 10 · An accelerator: VDLA, its instructions, dependency tokens and virtual threads
#
# Notebook 09 tensorized onto a CPU micro-kernel. The lecture notes go one step further, to a
# **TPU-like accelerator** (the TVM paper's "VDLA", the ancestor of VTA) whose on-chip
# memories are managed by the program and whose instructions work on whole tiles. mlc
# simulates such a machine, `mlc.vdla`, cycle by cycle and bit-exactly, so we can compile for
# it, run on it and *watch* it.
#
# ```
#     DRAM ─► LOAD ─► inp_buffer, wgt_buffer ─► COMPUTE ─► acc_buffer ─► STORE ─► DRAM
#                                               (GEMM core, ALU)
# ```
#
# Three modules (load, compute, store) run **at the same time**, each working through its
# own queue of instructions in order. They synchronise only through **dependency tokens**.
#
# **You will:** meet the machine and its instruction set, write a program by hand, break it
# by dropping a token, see two virtual threads hide memory latency on a Gantt chart, compile
# the notes' schedule (`cache_read` into `vdla.inp_buffer`, `tensorize` with
# `vdla.gemm8x8`) with `target="vdla"`, and place it on the accelerator's roofline.

# %%
import mlc  # first: a folder named "mlc" where Jupyter started would hide the package

if not hasattr(mlc, "build"):
    raise ImportError(f"'import mlc' found the folder {list(mlc.__path__)[0]}, not the mlc "
                      "package: start Jupyter from another folder (`make lab` in the "
                      "checkout does), or rename that folder")

import dataclasses
import inspect

import matplotlib
import numpy as np
from IPython import get_ipython

import mlc
from mlc import te, vdla
from mlc.errors import VDLAError
from mlc.vdla import MemScope, ProgramBuilder, UOp
from mlc.viz.vdla import vdla_latency_hiding, vdla_roofline

if get_ipython() is not None:  # in Jupyter, draw figures as pictures: %matplotlib inline
    get_ipython().run_line_magic("matplotlib", "inline")
matplotlib.rcParams["figure.dpi"] = 80
rng = np.random.default_rng(0)

# %% [markdown]
# **Why:** an accelerator has no caches and no out-of-order core: the compiler moves every
# tile and orders every module by hand, with tokens. Here the course's schedules target such a
# machine, and its cycle simulator shows the cost.
#
# Where this chapter works, on the map of chapter 00 (its levels in blue):

# %% tags=["nbval-ignore-output"]
from mlc.viz.concepts import stack

stack(chapter=10)

# %% [markdown]
# ## The machine
# Everything on chip is counted in **tiles**. With the default configuration a tile of
# `inp_buffer` is 8 x 8 int8 activations, a tile of `wgt_buffer` 8 x 8 int8 weights, a tile of
# `acc_buffer` 8 x 8 int32 accumulators. One GEMM micro-op is the notes' `gemm8x8`:
# `acc[b, o] += sum_i inp[b, i] * wgt[o, i]`, 512 multiply-adds in one cycle. A DMA costs a
# fixed latency plus its bytes over the DRAM bandwidth.

#
# The machine as a picture: three modules, their buffers, and the four token queues by which
# one waits for another (the tokens of exercise 1):

# %% tags=["nbval-ignore-output"]
from mlc.viz import concepts

concepts.vdla_queues()

# %%
cfg = vdla.DEFAULT
print(cfg)
for scope in (MemScope.INP, MemScope.WGT, MemScope.ACC, MemScope.UOP):
    print(f"{scope.value:18} {cfg.depth(scope):5} entries of {cfg.tile_bytes(scope):3} bytes")
print("peak:", cfg.peak_ops_per_cycle, "int ops/cycle;", "one 8x8 int8 tile load costs",
      cfg.dram_cycles(64), "cycles")

# %% [markdown]
# ## The instruction set, and a program by hand
# Five instructions: **LOAD** (a 2-D DMA into a buffer), **GEMM** (a micro-coded loop of
# `gemm8x8` micro-ops; with `reset=True` it is the notes' `fill_zero`), **ALU** (MIN, MAX,
# ADD, MUL, SHR on accumulator tiles), **STORE** and **FINISH**. Each carries four flags:
# `pop_prev`/`pop_next` (wait for a token from the module before/after) and
# `push_prev`/`push_next` (give one when done).
#
# Below: one 8x8 tile of `C = A @ W.T`. The load of W pushes a token to compute (the data
# is there), the GEMM pops it and pushes one to store, the store pops it; FINISH waits for
# the store.

# %%
a8 = rng.integers(-128, 128, (8, 8), dtype=np.int8)
w8 = rng.integers(-128, 128, (8, 8), dtype=np.int8)


def one_tile(flags_on=True):
    b = ProgramBuilder()
    k = b.uop_kernel([UOp(dst=0, src=0, wgt=0)])
    b.load_uops(sram_base=0, table_offset=k, count=1)
    b.gemm(0, 1, reset=True)                                        # fill_zero(CL)
    b.load(MemScope.INP, sram_base=0, dram_base=0, y_size=1, x_size=1)
    b.load(MemScope.WGT, sram_base=0, dram_base=1, y_size=1, x_size=1, push_next=flags_on)
    b.gemm(0, 1, pop_prev=flags_on, push_next=True)                 # CL += AL @ WL.T
    b.store(sram_base=0, dram_base=1, y_size=1, x_size=1, pop_prev=True, push_prev=True)
    return b.finish(pop_next=True)


def run_one_tile(program):
    dram = vdla.DRAM()
    dram.put("AW", np.stack([a8, w8]))                  # two 64-byte tiles: A at 0, W at 1
    dram.alloc("C", 256)                                # one int32 tile at tile address 1
    stats = vdla.simulate(program, dram)
    return dram.get("C", np.int32, (8, 8)), stats


program = one_tile()
print(program)
c8, stats = run_one_tile(program)
print("matches numpy:", np.array_equal(c8, a8.astype(np.int32) @ w8.astype(np.int32).T))
print(stats)

# %% [markdown]
# ## A missing token is found, not guessed
# Drop the token between the weight load and the GEMM. On real hardware the GEMM could start
# before its weights arrived and compute garbage now and then. The simulator sees that the
# load writes tiles the GEMM reads with no token ordering the two, and names both
# instructions (here the input load, 0x02, is the one caught: nothing orders it before the
# GEMM, 0x04, any more either). The cell checks that the message names those two.

# %%
caught = None
try:
    run_one_tile(one_tile(flags_on=False))
except VDLAError as err:
    caught = err
    print(type(err).__name__ + ":", err)
assert caught is not None and "0x02" in str(caught) and "0x04" in str(caught)

# %% [markdown]
# Writing flags by hand is where accelerator programs go wrong, so the compiler derives them:
# `vdla.insert_dependencies` (TVM's `InjectCoProcSync`) finds, for each instruction, the
# latest earlier instruction on a neighbouring module that touches the same tiles, and adds one
# push/pop pair.

# %%
bare = vdla.Program(tuple(dataclasses.replace(ins, pop_prev=False, pop_next=False,
                                              push_prev=False, push_next=False)
                          for ins in program.instructions), program.uops)
print(vdla.insert_dependencies(bare))

# %% [markdown]
# ## Virtual threads hide the memory latency
# With one instruction stream the load module waits for the GEMM to free the buffer, and the
# GEMM waits for the next load: the modules take turns. Split the work into **two virtual
# threads** with their own halves of the buffers and interleave their instructions: now
# thread 0's next load only waits for thread 0's GEMM, so it runs while thread 1 computes.
# Below, a 128 x 128 x 256 GEMM from `mlc.vdla`'s hand-written kernel library, simulated both
# ways (bars are instructions, arrows are tokens):

# %%
vdla_latency_hiding(until=6000)

# %% [markdown]
# ## The compiler path: the notes' schedule, `target="vdla"`
# The hardware designer declares the tensor instruction as the notes do: what it computes in
# te, and a lowering rule that calls the hardware (`mlc.vdla.intrin`, printed below). The
# tile computes `y[i, j] = sum_k w[i, k] * x[j, k]`, so the GEMM we schedule reads `A[y, k]` and
# `B[x, k]`.

# %%
print(inspect.getsource(vdla.declare_gemm))

# %% [markdown]
# The schedule is the notes' one: tile the output, cache the accumulator in `acc_buffer` and
# the inputs in `inp_buffer`/`wgt_buffer` at each step of the reduction, and tensorize the
# 8 x 8 x 8 tile. `threads=2` splits the rows of blocks over two virtual threads.

# %%
def vdla_gemm(m, n, k, block, kblock, threads=1):
    A = te.placeholder((m, k), name="A", dtype="int8")
    B = te.placeholder((n, k), name="B", dtype="int8")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((m, n), lambda y, x: te.sum(
        A[y, r].astype("int32") * B[x, r].astype("int32"), axis=r), name="C")
    s = te.create_schedule(C.op)
    CL = s.cache_write(C, vdla.acc_buffer)
    AL = s.cache_read(A, vdla.inp_buffer, [CL])
    BL = s.cache_read(B, vdla.wgt_buffer, [CL])
    y, x = s[C].op.axis
    yo, xo, yi, xi = s[C].tile(y, x, block, block)
    if threads > 1:
        tv, yo = s[C].split(yo, nparts=threads)
        s[C].bind(tv, te.thread_axis("vthread"))
    s[CL].compute_at(s[C], xo)
    yc, xc = s[CL].op.axis
    (kc,) = s[CL].op.reduce_axis
    ko, ki = s[CL].split(kc, factor=kblock)
    yco, yci = s[CL].split(yc, factor=8)
    xco, xci = s[CL].split(xc, factor=8)
    kio, kii = s[CL].split(ki, factor=8)
    s[CL].reorder(ko, yco, xco, kio, yci, xci, kii)
    s[AL].compute_at(s[CL], ko)
    s[BL].compute_at(s[CL], ko)
    s[CL].tensorize(yci, vdla.gemm8x8)
    return s, [A, B, C]


s, args = vdla_gemm(32, 32, 32, block=16, kblock=16)
print(mlc.lower(s, args, target="vdla"))

# %% [markdown]
# Read it against the notes' loop nest: `vdla.fill_zero(CL)` before the reduction loop,
# one `vdla.dma_copy2d` per cache (A's and B's) at each `k_0`, the tensorized tile whose
# loops (marked `vdla.uop_loop`) become the GEMM's micro-op loop, and the copy back to C. The
# passes that got it there are named in the target's list; codegen then runs the host loops
# once and emits the instruction stream:

# %%
print([name for name, _ in mlc.target.backend("vdla").passes])
f = mlc.build(s, args, target="vdla")
print("\n".join(f.get_source().splitlines()[:14]))
a = rng.integers(-128, 128, (32, 32), dtype=np.int8)
b = rng.integers(-128, 128, (32, 32), dtype=np.int8)
c = np.zeros((32, 32), np.int32)
f(a, b, c)
print("matches numpy:", np.array_equal(c, a.astype(np.int32) @ b.astype(np.int32).T))
print(f.stats)

# %% [markdown]
# ## Latency hiding through the compiler
# A 256 x 256 x 256 GEMM, blocks of 64 x 64, 64 columns of K a step, with one and with two
# virtual threads. The table shows the same number of instructions and almost the same bytes
# (the second thread's micro-op kernels add a few): only the order and the tokens differ.

# %%
a256 = rng.integers(-128, 128, (256, 256), dtype=np.int8)
b256 = rng.integers(-128, 128, (256, 256), dtype=np.int8)
ref256 = a256.astype(np.int32) @ b256.astype(np.int32).T
runs = {}
for threads in (1, 2):
    s, args = vdla_gemm(256, 256, 256, block=64, kblock=64, threads=threads)
    f = mlc.build(s, args, target="vdla")
    c256 = np.zeros((256, 256), np.int32)
    f(a256, b256, c256)
    assert np.array_equal(c256, ref256)
    runs[threads] = (f.stats, f.program)
print(f"{'virtual threads':>16} {'cycles':>9} {'utilization':>12} {'bytes moved':>12} "
      f"{'instructions':>13} {'ops/byte':>9}")
for threads, (st, prog) in runs.items():
    print(f"{threads:>16} {st.cycles:>9,} {st.utilization:>12.1%} "
          f"{st.bytes_loaded + st.bytes_stored:>12,} {len(prog):>13,} {st.intensity:>9.1f}")
print("ridge of the roofline:", cfg.peak_ops_per_cycle / cfg.dram_bytes_per_cycle, "ops/byte")
saved = 1 - runs[2][0].cycles / runs[1][0].cycles
print(f"two virtual threads take {saved:.0%} fewer cycles")
ridge = cfg.peak_ops_per_cycle / cfg.dram_bytes_per_cycle
assert all(st.intensity < ridge for st, _ in runs.values())  # both left of the ridge

# %%
vdla_latency_hiding(runs, until=12000)

# %% [markdown]
# The TVM paper reports the same effect on its FPGA: peak compute utilization from 70% to 88%
# on ResNet layers with latency hiding. Here the utilization is lower because these blocks are
# small: both runs do fewer operations per DRAM byte than the ridge (the table above), so the
# DRAM port bounds them (the slope of the roofline) and latency hiding can only bring them
# closer to that slope. Larger blocks move fewer bytes per operation; exercise 2 uses that.

# %%
vdla_roofline({f"{t} vthread": st for t, (st, _) in runs.items()})

# %% [markdown]
# ## Heterogeneous execution: a quantized MLP on the CPU and the accelerator
# The notes' last point about VDLA: the accelerator runs what it has instructions for, and the
# CPU the rest. A dense layer of a quantized network fits VDLA entirely: the GEMM on the tensor
# core, then bias, ReLU and **requantization** (round, shift right, clip to int8) as ALU
# instructions on the accumulators, then a STORE that writes int8. In te that is three stages,
# the GEMM `C` and the epilogue `D` both kept in `acc_buffer` with `set_scope`
# (`mlc.vdla.schedules.dense_schedule`):

# %%
from mlc.vdla.schedules import dense_compute, dense_schedule

print(inspect.getsource(dense_compute).split('"""')[1])
s, args = dense_schedule(16, 16, 16, shift=6, relu=True)
f = mlc.build(s, args, target="vdla")
epilogue = [ln for ln in f.get_source().splitlines() if "ALU" in ln or "STOR" in ln]
print("\n".join(epilogue[:8]))

# %% [markdown]
# The bias is one row of tiles (`Bias[y % 8, x]`): the ALU's source index does not move with
# the rows, so one bias row serves every row of the batch. Checked against numpy:

# %%
a16 = rng.integers(-128, 128, (16, 16), dtype=np.int8)
w16 = rng.integers(-128, 128, (16, 16), dtype=np.int8)
b16 = rng.integers(-5000, 5000, 16).astype(np.int32)
o16 = np.zeros((16, 16), np.int8)
f(a16, w16, np.tile(b16, (8, 1)), o16)
acc16 = a16.astype(np.int32) @ w16.astype(np.int32).T + b16
print(np.array_equal(o16, np.minimum((np.maximum(acc16, 0) + 32) >> 6, 127).astype(np.int8)))

# %% [markdown]
# Now the digits MLP of notebooks 06 and 09 (64-64-32-10), quantized for this machine
# (`mlc.graph.hetero`). VDLA has no multiplier by a real number, so each layer's output scale
# is its accumulator scale times a power of two (a shift), with one scale per weight tensor.
# The parts run in order, each built for its device: the input's quantization and the final
# dequantize + softmax as mlc graphs for the CPU, the three dense layers for `vdla`. Sizes that
# are not multiples of 8 are padded with zeros on the host (10 classes become 16 columns).

# %%
from mlc.examples.mlp import load_data, numpy_forward, train_mlp
from mlc.examples.qmlp import quantize_mlp, quantized_forward
from mlc.graph.hetero import build_hetero_mlp, integer_forward, quantize_mlp_for_vdla

x_train, y_train, x_test, y_test = load_data()
params = train_mlp(x_train, y_train)
qm = quantize_mlp_for_vdla(params, x_train)
print("requantization shifts:", qm.shift[:-1])
nets = {t: build_hetero_mlp(qm, len(x_test), threads=t) for t in (1, 2)}
cpu_net = build_hetero_mlp(qm, len(x_test), accel="llvm")
for part, target in nets[1].parts:
    print(f"{part:20} {target}")

# %%
def accuracy(probs_or_logits):
    return float((probs_or_logits.argmax(1) == y_test).mean())


probs = nets[1](x_test)
exact = np.array_equal(nets[1].logits(x_test), cpu_net.logits(x_test))
print(f"{'fp32 (numpy)':32} {accuracy(numpy_forward(params, x_test)):.2%}")
print(f"{'int8, float rescale (notebook 09)':32} "
      f"{accuracy(quantized_forward(quantize_mlp(params, x_train), x_test)):.2%}")
print(f"{'int8, shifts, all on the CPU':32} {accuracy(cpu_net(x_test)):.2%}")
print(f"{'int8, shifts, CPU + VDLA':32} {accuracy(probs):.2%}")
print("VDLA logits == CPU logits:", exact,
      "| == numpy:", np.array_equal(nets[1].logits(x_test), integer_forward(qm, x_test)))

# %% [markdown]
# Everything between the input's quantization and the dequantization is integer arithmetic,
# so the accelerator's logits are bit for bit the CPU's, and the accuracies of the last two
# rows are equal. The simulator also says what one batch of the test set costs on the
# accelerator, layer by layer, with one and with two virtual threads (the batch is padded to
# whole blocks of 8 rows per thread):

# %%
print(f"{'vthreads':>8} {'batch':>6} {'layer':>6} {'cycles':>7} {'busy: load':>11} "
      f"{'compute':>8} {'store':>6} {'GEMM':>6} {'ALU':>6}")
for t, net in nets.items():
    net(x_test)
    for k, st in enumerate(net.stats):
        busy = [st.busy[m] / st.cycles for m in vdla.Module]
        print(f"{t:>8} {net.padded_batch:>6} {k:>6} {st.cycles:>7,} {busy[0]:>11.0%} "
              f"{busy[1]:>8.0%} {busy[2]:>6.0%} {st.gemm_cycles:>6,} {st.alu_cycles:>6,}")
    print(f"{'':>8} {'':>6} {'all':>6} {net.cycles:>7,}")
saved_mlp = 1 - nets[2].cycles / nets[1].cycles
print(f"two virtual threads: {saved_mlp:.1%} fewer cycles;",
      f"a 512-byte DMA costs {cfg.dram_cycles(512)} cycles,",
      f"{cfg.dram_latency} of them latency")
busiest = [max(vdla.Module, key=lambda m, st=st: st.busy[m]).name for st in nets[1].stats]
print("busiest module per layer (1 thread):", busiest)
assert busiest == ["COMPUTE", "LOAD", "STORE"]  # the sentence below names them
assert nets[1].stats[0].alu_cycles > 0.8 * nets[1].stats[0].gemm_cycles

# %% [markdown]
# Unlike the GEMM above, a second virtual thread saves little here. Virtual threads overlap
# the three modules; they shorten none of them, and in each of these small layers one module
# is already busy for most of the run: compute in the first (its ALU epilogue, seven
# operations on every tile, costs nearly as much as its GEMM), the load module in the second,
# the store module in the last (it writes int32 logits). The loads and stores are short, one
# 8-row block each, so the DMA latency is most of their cost. Larger transfers per
# instruction, and fewer ALU operations per tile, would pay more than another thread.

# %% [markdown]
# > **What to remember**
# > * VDLA has load, compute and store modules that run at once, on-chip buffers, and token
# >   queues between them; a missing token is a race the simulator names.
# > * Virtual threads split the work so that loads overlap compute: the Gantt chart shows the
# >   gaps closing.
# > * The same te schedule style targets the accelerator (`target="vdla"`); its roofline and
# >   cycles are the cost.

# %% [markdown]
# ## Exercises
# Complete each answer (replace `raise NotImplementedError()`) and run the check under it:
# ✓, or ✗ with what is wrong
# (`hint("1")` gives a hint for exercise 1, the idea first, when you want one). Run the next cell
# first: it defines the checks, and
# again the one-tile program and the GEMM schedule of the sections above, so that nothing
# from the cells above is needed but the imports.

# %%
from mlc.testing.exercises import exercise, expect, hint  # noqa: F401 (hint("1") asks for a hint)

rng_ex = np.random.default_rng(1)


def bare_two_step_program():
    """One tile of C accumulated over two steps of k, A0 @ W0.T + A1 @ W1.T, with the
    second step's tiles loaded over the first's (one buffer each): no flags at all."""
    b = ProgramBuilder()
    k = b.uop_kernel([UOp(dst=0, src=0, wgt=0)])
    b.load_uops(sram_base=0, table_offset=k, count=1)                    # 0: micro-op kernel
    b.gemm(0, 1, reset=True)                                             # 1: fill_zero(CL)
    b.load(MemScope.INP, sram_base=0, dram_base=0, y_size=1, x_size=1)   # 2: A0
    b.load(MemScope.WGT, sram_base=0, dram_base=1, y_size=1, x_size=1)   # 3: W0
    b.gemm(0, 1)                                                         # 4: CL += A0 @ W0.T
    b.load(MemScope.INP, sram_base=0, dram_base=2, y_size=1, x_size=1)   # 5: A1, over A0
    b.load(MemScope.WGT, sram_base=0, dram_base=3, y_size=1, x_size=1)   # 6: W1, over W0
    b.gemm(0, 1)                                                         # 7: CL += A1 @ W1.T
    b.store(sram_base=0, dram_base=1, y_size=1, x_size=1)                # 8: C = CL
    return b.finish()                                                    # 9


a_steps = rng_ex.integers(-128, 128, (2, 8, 8), dtype=np.int8)
w_steps = rng_ex.integers(-128, 128, (2, 8, 8), dtype=np.int8)


@exercise("1. tokens", hint=[
          "a module that uses a tile waits for the module that produced it; a module that "
          "overwrites a buffer waits for the one still reading it; and FINISH waits until "
          "the result is in DRAM",
          "push_next / pop_prev carry a token downstream (load to compute to store), "
          "push_prev / pop_next upstream; the one-tile program of 'A program by hand' is "
          "half the answer"])
def check_tokens(flags):
    bare_program = bare_two_step_program()
    table = flags()
    expect(isinstance(table, dict) and table, "return a dict {index: {flag: True, ...}}")
    mine = vdla.Program(tuple(dataclasses.replace(ins, **table.get(i, {}))
                              for i, ins in enumerate(bare_program.instructions)),
                        bare_program.uops)
    dram = vdla.DRAM()
    dram.put("AW", np.stack([a_steps[0], w_steps[0], a_steps[1], w_steps[1]]))
    dram.alloc("C", 256)
    try:
        stats = vdla.simulate(mine, dram)
    except VDLAError as err:
        raise AssertionError(f"the program does not run: {str(err).split('. ')[0]}") from err
    finish = next(e for e in stats.timeline if e.opcode.name == "FINISH")
    store = next(e for e in stats.timeline if e.opcode.name == "STORE")
    expect(finish.start >= store.end, f"FINISH (instruction {finish.index}) starts at cycle "
           f"{finish.start}, before the store ends at cycle {store.end}: the host would read C "
           "before it is in DRAM. FINISH runs on the compute module: how does compute learn "
           "that the store is done?")
    c_tile = dram.get("C", np.int32, (8, 8))
    want = sum(a_steps[s].astype(np.int32) @ w_steps[s].astype(np.int32).T for s in (0, 1))
    expect(np.array_equal(c_tile, want), "the program runs but C is not A0 @ W0.T + A1 @ W1.T")


def vdla_gemm_again(m, n, k, block, kblock, threads=1):
    """vdla_gemm of "The compiler path", unchanged."""
    A = te.placeholder((m, k), name="A", dtype="int8")
    B = te.placeholder((n, k), name="B", dtype="int8")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((m, n), lambda y, x: te.sum(
        A[y, r].astype("int32") * B[x, r].astype("int32"), axis=r), name="C")
    s = te.create_schedule(C.op)
    CL = s.cache_write(C, vdla.acc_buffer)
    AL = s.cache_read(A, vdla.inp_buffer, [CL])
    BL = s.cache_read(B, vdla.wgt_buffer, [CL])
    yo, xo, _, _ = s[C].tile(*s[C].op.axis, block, block)
    if threads > 1:
        tv, yo = s[C].split(yo, nparts=threads)
        s[C].bind(tv, te.thread_axis("vthread"))
    s[CL].compute_at(s[C], xo)
    yc, xc = s[CL].op.axis
    ko, ki = s[CL].split(s[CL].op.reduce_axis[0], factor=kblock)
    yco, yci = s[CL].split(yc, factor=8)
    xco, xci = s[CL].split(xc, factor=8)
    kio, kii = s[CL].split(ki, factor=8)
    s[CL].reorder(ko, yco, xco, kio, yci, xci, kii)
    s[AL].compute_at(s[CL], ko)
    s[BL].compute_at(s[CL], ko)
    s[CL].tensorize(yci, vdla.gemm8x8)
    return s, [A, B, C]


def gemm_cycles(block, kblock, threads):
    a_big = rng_ex.integers(-128, 128, (256, 256), dtype=np.int8)
    b_big = rng_ex.integers(-128, 128, (256, 256), dtype=np.int8)
    f_big = mlc.build(*vdla_gemm_again(256, 256, 256, block, kblock, threads), target="vdla")
    c_big = np.zeros((256, 256), np.int32)
    f_big(a_big, b_big, c_big)
    expect(np.array_equal(c_big, a_big.astype(np.int32) @ b_big.astype(np.int32).T),
           "the GEMM does not compute A @ B.T")
    return f_big.stats.cycles


@exercise("2. fewer cycles", hint=[
          "cycles go to moving bytes and to waiting: a bigger block serves more of C with "
          "each tile it loads, and virtual threads let the loads of one overlap the GEMMs "
          "of another",
          "vary block and kblock (the buffers must still hold them) with more than one "
          "thread, and read the cycle counts the check prints"])
def check_fewer_cycles(choose):
    block, kblock, threads = choose()
    baseline = gemm_cycles(64, 64, 2)
    cycles = gemm_cycles(block, kblock, threads)
    expect(cycles < 46_000, f"({block}, {kblock}, {threads}) takes {cycles:,} cycles (the "
           f"notebook's (64, 64, 2) takes {baseline:,}); get under 46,000")

# %% [markdown]
# **1. Tokens.** `bare_two_step_program()` accumulates one tile of C over two steps of k,
# `A0 @ W0.T + A1 @ W1.T`, loading the second step's tiles over the first's (one buffer
# each), with no flags at all (it races). Return the flags each instruction needs, as a dict
# `{index: {"push_next": True, ...}}`, so that it runs race-free and computes the sum. The
# one-tile program of "A program by hand" has half the answer; the other half is new: what
# must the second loads wait for? Don't call `insert_dependencies` (you may compare with it
# afterwards).

# %%
def my_flags():
    ### BEGIN SOLUTION
    return {3: {"push_next": True},
            4: {"pop_prev": True, "push_prev": True},
            5: {"pop_next": True},
            6: {"push_next": True},
            7: {"pop_prev": True, "push_next": True},
            8: {"pop_prev": True, "push_prev": True},
            9: {"pop_next": True}}
    ### END SOLUTION

check_tokens(my_flags)

# %% [markdown]
# **2. Fewer cycles.** Choose `block`, `kblock` and `threads` for the 256 x 256 x 256 GEMM of
# "Latency hiding through the compiler" so that it runs in **fewer than 46,000 cycles** (the
# buffers must still fit: the compiler tells you when they do not). Return the three numbers.

# %%
def choose_gemm_schedule():
    ### BEGIN SOLUTION
    return 128, 128, 2
    ### END SOLUTION

check_fewer_cycles(choose_gemm_schedule)
