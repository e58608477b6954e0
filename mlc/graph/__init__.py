"""The graph level: a DAG of ops, passes (folding, fusion, memory planning), build to kernels.

    from mlc import graph
    x = graph.var("x", shape=(1, 784))
    y = graph.nn.relu(graph.nn.dense(x, graph.const(W1)) + graph.const(b1))
    g = graph.optimize(graph.Graph([x], [y]))
    mod = graph.build(g, target="llvm")      # the whole graph as ONE native function
    mod.set_input(x=batch); mod.run(); out = mod.get_output(0)
    out = mod(x=batch)[0]; print(mod.prim_func); mod.debug_run(x=batch)
"""

from mlc.graph import nn, qnn  # noqa: F401
from mlc.graph.build import GraphModule, build  # noqa: E402
from mlc.graph.evaluate import evaluate
from mlc.graph.frontend import from_onnx, from_torch  # noqa: E402
from mlc.graph.ir import (
    Call,
    Constant,
    FusedGroup,
    Graph,
    MemoryPlan,
    Node,
    Var,
    call,
    const,
    rewrite,
    var,
)
from mlc.graph.op import OpDef, OpPattern, TensorType, get_op, list_ops, register_op
from mlc.graph.ops.tensor import (
    abs,
    add,
    concatenate,
    copy,
    divide,
    exp,
    log,
    max,
    maximum,
    mean,
    min,
    minimum,
    multiply,
    negative,
    pad,
    power,
    reshape,
    sigmoid,
    sort,
    sqrt,
    subtract,
    sum,
    tanh,
    transpose,
)
from mlc.graph.passes import (
    PIPELINE,
    PostDomTree,
    alter_op_layout,
    eliminate_common_subexpr,
    eliminate_dead_code,
    fold_constant,
    fuse_ops,
    optimize,
    plan_memory,
    simplify_inference,
)

# ruff: noqa: F401
