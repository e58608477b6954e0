"""The loop IR: expressions, statements, blocks, PrimFunc, and the tools that work on them."""

from mlc.tir import tensor_intrin
from mlc.tir.analysis import assert_structural_equal, structural_equal, structural_hash
from mlc.tir.arith import Analyzer, simplify
from mlc.tir.call import call_extern, call_packed, call_pure_extern
from mlc.tir.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    CommReducer,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    IterKind,
    IterVar,
    Let,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    PrimExpr,
    Ramp,
    Range,
    Reduce,
    Select,
    SizeVar,
    StringImm,
    Sub,
    Var,
    const,
    convert,
)
from mlc.tir.functor import IRMutator, IRVisitor, post_order_visit, substitute
from mlc.tir.schedule import BlockRV, LoopRV, Schedule, Trace
from mlc.tir.stmt import (
    Allocate,
    Block,
    BlockRealize,
    Buffer,
    BufferRegion,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    PrimFunc,
    SeqStmt,
    Stmt,
    seq,
)
from mlc.tir.tensor_intrin import TensorIntrin
from mlc.tir.verify import verify_well_formed

__all__ = [
    "EQ", "GE", "GT", "LE", "LT", "NE", "Add", "And", "Broadcast", "BufferLoad", "Call", "Cast",
    "CommReducer", "Div", "FloatImm", "FloorDiv", "FloorMod", "IntImm", "IterKind", "IterVar",
    "Let", "Max", "Min", "Mod", "Mul", "Not", "Or", "PrimExpr", "Ramp", "Range", "Reduce",
    "Select", "SizeVar", "StringImm", "Sub", "Var", "const", "convert", "Allocate", "Block",
    "BlockRealize", "Buffer", "BufferRegion", "BufferStore", "Evaluate", "For", "ForKind",
    "IfThenElse", "LetStmt", "PrimFunc", "SeqStmt", "Stmt", "seq", "IRMutator", "IRVisitor",
    "post_order_visit", "substitute", "Analyzer", "simplify", "assert_structural_equal",
    "structural_equal", "structural_hash", "verify_well_formed", "BlockRV", "LoopRV", "Schedule",
    "Trace", "TensorIntrin", "tensor_intrin", "call_extern", "call_packed", "call_pure_extern",
]
