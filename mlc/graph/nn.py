"""``graph.nn.*``: neural-network op builders (dense, conv2d, pooling, softmax...)."""

from mlc.graph.ops.nn import (  # noqa: F401
    avg_pool2d,
    batch_flatten,
    batch_matmul,
    batch_norm,
    bias_add,
    conv2d,
    dense,
    flatten,
    gelu,
    global_avg_pool2d,
    layer_norm,
    log_softmax,
    matmul,
    max_pool2d,
    pad,
    relu,
    softmax,
)
