"""Heterogeneous execution: a quantized MLP whose dense layers run on the VDLA accelerator
and whose float parts run on the CPU (the notes' "heterogeneous devices").

::

    qm = quantize_mlp_for_vdla(params, x_train)     # int8 weights, int32 biases, shifts
    net = build_hetero_mlp(qm, batch=360, threads=2)
    probs = net(x_test)                             # CPU -> vdla -> vdla -> vdla -> CPU
    net.cycles, net.parts                           # simulated cycles of the last run

The split follows what each device can do:

=========================  ======  ==================================================
part                       target  what it computes
=========================  ======  ==================================================
``quantize``               llvm    ``xq = clip(round(x / s_0))`` int8 (``graph.qnn``)
``dense0`` ... ``denseL``  vdla    ``acc = xq @ wq.T + bq`` (GEMM), then for a hidden
                                   layer relu and requantize on the ALU:
                                   ``min((max(acc, 0) + 2**(s-1)) >> s, 127)``, stored
                                   as int8; the last layer stores the int32 logits
``dequantize+softmax``     llvm    ``softmax(logits * s_acc)`` (``graph``), argmax
=========================  ======  ==================================================

The accelerator has no multiplier by a real number, so requantization is a shift: each
layer's output scale is its accumulator scale times a power of two,
``s_{k+1} = s_k * s_w * 2**shift`` (the shift chosen so that the calibrated range fits in
int8), with one scale per weight tensor. Everything between the input quantization and the
dequantization is integer arithmetic, so the accelerator's result is exactly what the same
layers compute on the CPU (``build_hetero_mlp(qm, accel="llvm")``, and
:func:`integer_forward` in numpy). Sizes that are not multiples of 8 are padded with zeros
on the host (the batch, and a layer's units: 10 classes become 16 columns, sliced off
before the softmax).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mlc.errors import GraphError
from mlc.graph import nn, qnn
from mlc.graph.build import GraphModule, build
from mlc.graph.ir import Graph, var
from mlc.graph.ops.quantize import ref_quantize
from mlc.graph.passes.pipeline import optimize

Params = list[tuple[np.ndarray, np.ndarray]]


def _pad8(n: int) -> int:
    return -(-n // 8) * 8


@dataclass
class VDLAQuantizedMLP:
    """Integer-only quantization of an MLP: per layer an int8 weight ``wq`` (units x in),
    an int32 bias ``bq`` at the accumulator's scale, and the requantization ``shift`` to the
    next layer's int8 input (None for the last layer, which keeps int32 logits).
    ``s_in`` is the input scale, ``s_acc`` the accumulator scale of each layer."""

    wq: list[np.ndarray]
    bq: list[np.ndarray]
    shift: list[int | None]
    s_in: float
    s_acc: list[float]


def quantize_mlp_for_vdla(params: Params, x_calib: np.ndarray) -> VDLAQuantizedMLP:
    """Quantize the fp32 ``params`` (weights ``(units, in)``, relu between layers),
    calibrating each activation's range on ``x_calib``: weights per tensor,
    ``s_w = max|w| / 127``; each hidden layer's output scale ``s_k * s_w * 2**shift`` with
    the smallest ``shift`` whose int8 range covers the calibrated maximum."""
    h = np.asarray(x_calib, np.float32)
    s = qnn.calibrate(h)
    s_in = s
    wq: list[np.ndarray] = []
    bq: list[np.ndarray] = []
    shifts: list[int | None] = []
    s_acc: list[float] = []
    for k, (w, b) in enumerate(params):
        w = np.asarray(w, np.float32)
        s_w = float(np.abs(w).max()) / 127.0 or 1.0
        wq.append(np.clip(np.round(w / s_w), -127, 127).astype(np.int8))
        acc_scale = s * s_w
        bq.append(np.round(np.asarray(b, np.float64) / acc_scale).astype(np.int32))
        s_acc.append(acc_scale)
        h = h @ w.T + b
        if k < len(params) - 1:
            h = np.maximum(h, 0)
            target = qnn.calibrate(h)
            shift = max(0, int(np.ceil(np.log2(target / acc_scale))))
            shifts.append(shift)
            s = acc_scale * 2.0**shift
        else:
            shifts.append(None)
    return VDLAQuantizedMLP(wq, bq, shifts, s_in, s_acc)


def _quantize_input(x: np.ndarray, s_in: float) -> np.ndarray:
    return ref_quantize(np.asarray(x, np.float32), s_in, 0, "int8")


def integer_forward(qm: VDLAQuantizedMLP, x: np.ndarray) -> np.ndarray:
    """The int32 logits in numpy, operation for operation as the accelerator computes them."""
    h = _quantize_input(x, qm.s_in).astype(np.int64)
    for wq, bq, shift in zip(qm.wq, qm.bq, qm.shift):
        acc = h @ wq.astype(np.int64).T + bq
        if shift is None:
            return acc.astype(np.int32)
        v = np.maximum(acc, 0)
        if shift:
            v = (v + (1 << (shift - 1))) >> shift
        h = np.minimum(v, 127)
    raise ValueError("the MLP has no layers")


@dataclass
class HeteroMLP:
    """The built parts, run in order by ``net(x)``: the CPU's input quantization
    (``head``), the dense layers (``layers``, VDLA modules or CPU modules), the CPU's
    dequantize + softmax (``tail``). ``stats`` holds each layer's simulator stats of the
    last run (empty on the CPU)."""

    qm: VDLAQuantizedMLP
    batch: int
    padded_batch: int
    dims: list[tuple[int, int]]  # padded (in, units) of each layer
    head: GraphModule
    layers: list[Any]
    tail: GraphModule
    accel: str
    weights: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)
    stats: list[Any] = field(default_factory=list)

    @property
    def parts(self) -> list[tuple[str, str]]:
        """``(part, target)`` in the order they run."""
        return [("quantize", "llvm"),
                *[(f"dense{k}", self.accel) for k in range(len(self.layers))],
                ("dequantize+softmax", "llvm")]

    @property
    def cycles(self) -> int:
        """Simulated accelerator cycles of the last run, all layers."""
        return sum(s.cycles for s in self.stats)

    def logits(self, x: np.ndarray) -> np.ndarray:
        """The int32 logits (the accelerator's output, padding sliced off)."""
        x = np.asarray(x, np.float32)
        features = self.qm.wq[0].shape[1]
        if x.shape != (self.batch, features):
            raise GraphError(
                f"the MLP was built for inputs of shape ({self.batch}, {features}): batches of "
                f"{self.batch} rows of {features} features; got shape {x.shape}")
        xp = np.zeros((self.padded_batch, self.dims[0][0]), np.float32)
        xp[: x.shape[0], : x.shape[1]] = x
        h = self.head(x=xp)[0]
        self.stats = []
        for (wp, bp), (_, units), f, shift in zip(self.weights, self.dims, self.layers,
                                                  self.qm.shift):
            out = np.zeros((self.padded_batch, units), np.int32 if shift is None else np.int8)
            stats = f(h, wp, bp, out)
            if stats is not None:  # an accelerator's module returns its run's statistics
                self.stats.append(stats)
            h = out
        return h[: self.batch, : self.qm.wq[-1].shape[0]]

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """Class probabilities of ``x`` (``batch`` rows)."""
        return self.tail(logits=self.logits(x))[0]


def _runs_on_accelerator(accel: str) -> bool:
    """Does ``accel`` name the accelerator (its dense layers need the accelerator's schedule)
    or a CPU target (the default schedule)? Read from the target's features, not its name."""
    from mlc.target import TargetError, parse_target

    try:
        tgt = parse_target(accel)
    except TargetError:
        tgt = None
    if tgt is not None and tgt.has_feature("accelerator"):
        return True
    if tgt is not None and tgt.has_feature("cpu"):
        return False
    raise GraphError(f"accel must be the accelerator ('vdla') or a CPU target ('llvm'), "
                     f"got {accel!r}")


def build_hetero_mlp(qm: VDLAQuantizedMLP, batch: int, threads: int = 1, block: int = 8,
                     accel: str = "vdla") -> HeteroMLP:
    """Build each part for its device: the dense layers with
    :func:`mlc.vdla.schedules.dense_schedule` for ``accel="vdla"`` (``threads`` virtual
    threads, ``block`` rows per step) or the same computation with its default schedule
    for ``accel="llvm"`` (the CPU baseline); the quantization and the softmax as graphs
    for the CPU."""
    from mlc import te
    from mlc.driver import build as build_kernel
    from mlc.vdla.schedules import dense_compute, dense_schedule

    on_accelerator = _runs_on_accelerator(accel)
    rows = block * threads
    padded = -(-batch // rows) * rows
    dims = [(_pad8(w.shape[1]), _pad8(w.shape[0])) for w in qm.wq]
    weights: list[tuple[np.ndarray, np.ndarray]] = []
    layers: list[Any] = []
    for (k, n), wq, bq, shift in zip(dims, qm.wq, qm.bq, qm.shift):
        wp = np.zeros((n, k), np.int8)
        wp[: wq.shape[0], : wq.shape[1]] = wq
        bp = np.zeros((8, n), np.int32)
        bp[:, : bq.shape[0]] = bq
        weights.append((wp, bp))
        relu = shift is not None
        if on_accelerator:
            s, args = dense_schedule(padded, n, k, shift=shift, relu=relu, block=block,
                                     threads=threads)
        else:
            A, W, B, _, _, O = dense_compute(padded, n, k, shift=shift, relu=relu)
            s, args = te.create_schedule(O.op), [A, W, B, O]
        layers.append(build_kernel(s, args, target=accel, name=f"dense{len(layers)}"))
    x = var("x", (padded, dims[0][0]))
    head = build(optimize(Graph([x], [qnn.quantize(x, qm.s_in, 0, "int8")])), "llvm")
    logits = var("logits", (batch, qm.wq[-1].shape[0]), "int32")
    probs = nn.softmax(qnn.dequantize(logits, qm.s_acc[-1]))
    tail = build(optimize(Graph([logits], [probs])), "llvm")
    return HeteroMLP(qm, batch, padded, dims, head, layers, tail, accel, weights)


__all__ = ["HeteroMLP", "VDLAQuantizedMLP", "build_hetero_mlp", "integer_forward",
           "quantize_mlp_for_vdla"]
