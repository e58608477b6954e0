"""``topi.nn``: neural-network operators as te computations."""

from mlc.topi.elemwise import gelu, relu
from mlc.topi.nn.conv import avg_pool2d, conv2d, global_avg_pool2d, max_pool2d
from mlc.topi.nn.dense import batch_matmul, dense, dense_pack, matmul, pack_weight
from mlc.topi.nn.norm import batch_norm, bias_add, layer_norm, log_softmax, softmax
from mlc.topi.transform import flatten, pad

__all__ = ["gelu", "relu", "avg_pool2d", "conv2d", "global_avg_pool2d", "max_pool2d",
           "batch_matmul", "dense", "dense_pack", "matmul", "pack_weight", "batch_norm",
           "bias_add", "layer_norm", "log_softmax", "softmax", "flatten", "pad"]
