"""x86 operators that use the CPU's low-precision instructions (int8 ``vpdpbusd``, bf16
``vdpbf16ps``) through tensor intrinsics, with portable fallbacks on any other CPU."""

from mlc.topi.x86.dense_int8 import dense_int8, pack_weight, schedule_dense_int8
from mlc.topi.x86.tensor_intrin import register_dp2a_bf16, register_dp4a

__all__ = ["dense_int8", "pack_weight", "register_dp2a_bf16", "register_dp4a",
           "schedule_dense_int8"]
