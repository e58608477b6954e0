"""Drawn figures of the course's central ideas, generated from code so they stay true and diff.

    from mlc.viz.concepts import stack, memory_hierarchy, tuning_loop
    stack()                 # the levels: model, graph, te, schedule, loops, code
    stack(chapter=4)        # the same map with chapter 04's levels highlighted (each chapter's top)
    memory_hierarchy()      # registers / L1 / L2 / DRAM and which tile lives where
    tuning_loop()           # propose -> build -> measure -> cost model -> propose
    fusion_patterns()       # which op patterns fuse into which
    gpu_hierarchy()         # grid -> thread blocks (shared memory) -> threads (registers)
    vdla_queues()           # load / compute / store modules, their buffers and token queues

Each returns a :class:`mlc.viz.Drawing` (SVG in a notebook, DOT text when graphviz's ``dot``
is missing). ``notebooks/figures/make_figures.py`` writes every one to an ``.svg`` file.
"""

from __future__ import annotations

from mlc.errors import ArgumentError
from mlc.viz._dot import Drawing

# (key, label, what it is) of each level, top to bottom
LEVELS = [
    ("model", "model", "PyTorch / ONNX / numpy weights"),
    ("graph", "computation graph", "ops on whole tensors; fusion, layout, memory plan"),
    ("te", "tensor expression", "what each output element is (te.compute)"),
    ("schedule", "schedule", "how to run it: split, reorder, tile, vectorize, bind"),
    ("loops", "loop IR", "loops, buffers, vector lanes (tir, lowered)"),
    ("code", "code", "LLVM -> x86 / CUDA -> GPU / VDLA instructions"),
]

# which levels each chapter works at (the highlighted part of the map)
CHAPTER_LEVELS: dict[int, tuple[str, ...]] = {
    0: tuple(key for key, _, _ in LEVELS),
    1: ("te",),
    2: ("schedule",),
    3: ("loops",),
    4: ("schedule", "code"),
    5: ("graph",),
    6: ("model", "graph", "te", "schedule", "loops", "code"),
    7: ("schedule",),
    8: ("schedule", "code"),
    9: ("schedule", "loops"),
    10: ("loops", "code"),
    11: ("code",),
    12: ("schedule", "code"),
    13: ("graph", "te", "schedule"),
}

# where the course goes deeper into each level
WHERE = {
    "model": "06",
    "graph": "05, 06, 13",
    "te": "01",
    "schedule": "02, 04, 07, 12",
    "loops": "03, 09",
    "code": "04 (CPU), 08 (GPU), 10 (accelerator), 11 (deployment)",
}

_ON, _OFF = "#1565c0", "#cfd8dc"


def stack(chapter: int | None = None, highlight: tuple[str, ...] | None = None) -> Drawing:
    """The compiler's levels as one column of boxes, with the chapters that teach each.

    ``chapter=N`` highlights the levels chapter N works at (``CHAPTER_LEVELS``), and
    ``highlight=("schedule",)`` names them directly; with neither, every level is drawn
    alike. Unknown chapters or level names raise ``ArgumentError`` (a ``ValueError``)
    naming the known ones."""
    if highlight is None and chapter is not None:
        if chapter not in CHAPTER_LEVELS:
            raise ArgumentError(f"no chapter {chapter}; chapters are {sorted(CHAPTER_LEVELS)}")
        highlight = CHAPTER_LEVELS[chapter]
    keys = [key for key, _, _ in LEVELS]
    unknown = [h for h in (highlight or ()) if h not in keys]
    if unknown:
        raise ArgumentError(f"unknown level(s) {unknown}; the levels are {keys}")
    lit = set(highlight) if highlight else set(keys)
    compact = chapter is not None and chapter != 0
    title = ("the compiler's levels" if not compact
             else f"where chapter {chapter:02d} works (blue) on the map of chapter 00")
    d = Drawing(name="stack")
    d.attr(rankdir="LR" if compact else "TB", nodesep="0.2", ranksep="0.25", label=title,
           labelloc="t", fontname="Helvetica", fontsize="12" if compact else "13")
    d.attr("node", shape="box", style="rounded,filled", fontname="Helvetica",
           fontsize="10" if compact else "11", width="1" if compact else "3.6")
    d.attr("edge", color="#607d8b", arrowsize="0.7")
    for key, label, what in LEVELS:
        on = key in lit
        where = ("chapter " if "," not in WHERE[key] else "chapters ") + WHERE[key]
        text = label if compact else f"{label}\n{what}\n{where}"
        d.node(key, text,
               fillcolor=_ON if on else _OFF, fontcolor="white" if on else "#455a64",
               color=_ON if on else "#b0bec5", penwidth="2" if on else "1")
    for (a, _, _), (b, _, _) in zip(LEVELS, LEVELS[1:]):
        d.edge(a, b)
    return d


def memory_hierarchy() -> Drawing:
    """Registers, L1, L2, DRAM with rough sizes and latencies, and which piece of a tiled
    matmul lives in each: the reason for tiling (chapters 02 and 04)."""
    d = Drawing(name="memory")
    d.attr(rankdir="LR", fontname="Helvetica", label="a tiled C = A @ B on one core (typical sizes "
           "and latencies): each tile is sized to stay in a level", labelloc="t", fontsize="12")
    d.attr("node", shape="box", style="filled", fontname="Helvetica", fontsize="10")
    rows = [
        ("reg", "registers\n~2 KB, 1 cycle", "#1565c0", "white", "a 4 x 16 block of C\n"
         "(the accumulators)"),
        ("l1", "L1 cache\n48 KB, ~5 cycles", "#42a5f5", "white", "a k-slice of A's rows\n"
         "and B's panel"),
        ("l2", "L2 cache\n2 MB, ~15 cycles", "#90caf9", "black", "B's packed panel\n"
         "(re-read for every row block)"),
        ("dram", "DRAM\nGBs, ~100 ns", "#e3f2fd", "black", "all of A, B, C"),
    ]
    for key, label, fill, font, holds in rows:
        d.node(key, label, fillcolor=fill, fontcolor=font, width="1.8")
        d.node(key + "_t", holds, shape="note", fillcolor="#fff8e1", fontcolor="black")
        d.edge(key, key + "_t", style="dashed", arrowhead="none")
    for (a, *_), (b, *_) in zip(rows, rows[1:]):
        d.edge(b, a, label="loads", fontsize="9")
    return d


def tuning_loop() -> Drawing:
    """The auto-tuner's loop (chapter 07): a search space of schedules, a cost model that
    ranks candidates, the few best built and timed, and the timings teaching the model."""
    d = Drawing(name="tuning")
    d.attr(rankdir="LR", fontname="Helvetica", fontsize="12")
    d.attr("node", shape="box", style="rounded,filled", fillcolor="#e3f2fd",
           fontname="Helvetica", fontsize="10")
    d.node("space", "search space\n(tile sizes, loop orders,\nvectorize, parallel)",
           shape="folder", fillcolor="#fff8e1")
    d.node("propose", "propose many\ncandidates")
    d.node("model", "cost model\n(predicts time,\nno run)", fillcolor="#ffe0b2")
    d.node("build", "build + time\nthe best few\n(on the real machine)", fillcolor="#c8e6c9")
    d.node("best", "best schedule\nso far", shape="note", fillcolor="#f1f8e9")
    d.edge("space", "propose")
    d.edge("propose", "model", label="thousands")
    d.edge("model", "build", label="top k")
    d.edge("build", "best")
    d.edge("build", "model", label="timings retrain it", style="dashed", constraint="false")
    return d


def fusion_patterns() -> Drawing:
    """The graph level's fusion rules (chapter 05) on the MLP of chapter 06: an op whose
    output takes an elementwise epilogue (dense) fuses the broadcast and elementwise ops
    after it, so one kernel computes the chain and the intermediate never reaches memory;
    two such complex ops never share a kernel."""
    d = Drawing(name="fusion")
    d.attr(rankdir="LR", fontname="Helvetica", fontsize="12",
           label="fused groups (dashed): one kernel each; red: a kernel boundary, the value "
                 "goes through memory", labelloc="t")
    d.attr("node", shape="box", style="filled", fontname="Helvetica", fontsize="10")
    with d.subgraph(name="cluster_g0") as c:
        c.attr(style="dashed", color="#43a047", label="group 0", fontsize="10")
        c.node("dense", "nn.dense\nOUT_ELEMWISE_FUSABLE", fillcolor="#bbdefb")
        c.node("add", "add (bias)\nBROADCAST", fillcolor="#c8e6c9")
        c.node("relu", "nn.relu\nELEMWISE", fillcolor="#c8e6c9")
        c.edge("dense", "add")
        c.edge("add", "relu")
    with d.subgraph(name="cluster_g1") as c:
        c.attr(style="dashed", color="#43a047", label="group 1", fontsize="10")
        c.node("dense2", "nn.dense\nOUT_ELEMWISE_FUSABLE", fillcolor="#bbdefb")
        c.node("add2", "add (bias)\nBROADCAST", fillcolor="#c8e6c9")
        c.edge("dense2", "add2")
    with d.subgraph(name="cluster_g2") as c:
        c.attr(style="dashed", color="#43a047", label="group 2", fontsize="10")
        c.node("softmax", "nn.softmax\nOUT_ELEMWISE_FUSABLE", fillcolor="#bbdefb")
    d.edge("relu", "dense2", color="#e53935", label="every output of dense\nreads a whole row",
           fontsize="9")
    d.edge("add2", "softmax", color="#e53935", label="two complex ops:\nnever one kernel",
           fontsize="9")
    return d


def gpu_hierarchy() -> Drawing:
    """A GPU kernel's grid (chapter 08): thread blocks on streaming multiprocessors, each
    with its shared memory, threads in warps of 32 with their registers, global memory
    under all of them."""
    d = Drawing(name="gpu")
    d.attr(rankdir="TB", fontname="Helvetica", fontsize="12", compound="true")
    d.attr("node", shape="box", style="filled", fontname="Helvetica", fontsize="10")
    d.node("global", "global memory (GBs, ~500 cycles, typical): X, W, Y", fillcolor="#e3f2fd",
           width="5")
    for b in range(2):
        with d.subgraph(name=f"cluster_b{b}") as c:
            c.attr(label=f"thread block blockIdx.x = {b} (on one SM)", style="rounded",
                   color="#1565c0", fontsize="10")
            c.node(f"sh{b}", "shared memory (48 KB, ~30 cycles)\nX_shared, W_shared tiles",
                   fillcolor="#90caf9")
            for w in range(2):
                c.node(f"w{b}{w}", f"warp {w}: threads {32 * w}..{32 * w + 31}\n"
                       "each with its registers (Y accumulators)", fillcolor="#bbdefb")
                c.edge(f"sh{b}", f"w{b}{w}", label="__syncthreads()\nthen read" if w == 0
                       else "", fontsize="8")
        d.edge("global", f"sh{b}", label="cooperative load", fontsize="9")
    return d


def vdla_queues() -> Drawing:
    """VDLA (chapters 09 and 10): three modules that run at once, their on-chip buffers,
    and the four token queues by which one module waits for another."""
    d = Drawing(name="vdla")
    d.attr(rankdir="LR", fontname="Helvetica", fontsize="12")
    d.attr("node", shape="box", style="filled", fontname="Helvetica", fontsize="10")
    d.node("dram", "DRAM", shape="cylinder", fillcolor="#e3f2fd")
    d.node("load", "LOAD module", fillcolor="#64b5f6")
    d.node("buf", "input / weight\nbuffers (SRAM)", shape="box3d", fillcolor="#fff8e1")
    d.node("compute", "COMPUTE module\n(GEMM core, ALU)", fillcolor="#ef9a9a")
    d.node("acc", "accumulator\nbuffer", shape="box3d", fillcolor="#fff8e1")
    d.node("store", "STORE module", fillcolor="#a5d6a7")
    d.edge("dram", "load")
    d.edge("load", "buf")
    d.edge("buf", "compute")
    d.edge("compute", "acc")
    d.edge("acc", "store")
    d.edge("store", "dram", constraint="false")
    tok = {"fontsize": "9", "style": "dashed", "constraint": "false"}
    d.edge("load", "compute", label="LD->EX: data is in", color="#0d47a1", **tok)
    d.edge("compute", "load", label="EX->LD: buffer free again", color="#b71c1c", **tok)
    d.edge("compute", "store", label="EX->ST: result ready", color="#1b5e20", **tok)
    d.edge("store", "compute", label="ST->EX: acc stored, reuse it", color="#e65100", **tok)
    return d


FIGURES = {
    "stack": stack,
    "memory_hierarchy": memory_hierarchy,
    "tuning_loop": tuning_loop,
    "fusion_patterns": fusion_patterns,
    "gpu_hierarchy": gpu_hierarchy,
    "vdla_queues": vdla_queues,
}
