"""GPU lowering shared by the ``"cuda"`` and ``"cuda-sim"`` targets: bound loops become
kernel launches (:func:`split_host_device`) and barriers go where threads share memory
(:func:`insert_thread_sync`)."""

from mlc.target.gpu.split_host_device import (
    insert_thread_sync,
    intermediates,
    kernels,
    split_host_device,
    thread_sync,
)

__all__ = ["insert_thread_sync", "intermediates", "kernels", "split_host_device", "thread_sync"]
