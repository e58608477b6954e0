"""``mlc.nd``: arrays that know their device, TVM's ``tvm.nd.array(x, dev)`` spelling.

mlc's compiled functions take plain numpy arrays; ``mlc.nd.array`` exists so that programs
written for TVM run as written::

    dev = mlc.cpu(0)                       # or remote.cpu(0) for a device behind mlc.rpc
    a = mlc.nd.array(np.random.uniform(size=1024), dev)
    b = mlc.nd.empty((1024,), "float64", dev)
    f(a, b)
    b.numpy()                              # b.asnumpy(), TVM's older name, works too

An :class:`NDArray` *is* a numpy array (a subclass) with a ``device``. Its data lives in this
process; for a remote device, :mod:`mlc.rpc` sends it to the remote machine for each call and
copies what the function wrote back into it, so ``b.numpy()`` after a remote call holds the
remote result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mlc.errors import ArgumentError


@dataclass(frozen=True)
class Device:
    """A device: its kind (``"cpu"``), its index, and the remote session it belongs to
    (None: this process)."""

    device_type: str = "cpu"
    device_id: int = 0
    session: Any = None

    def __repr__(self) -> str:
        where = "" if self.session is None else f", remote {self.session.address}"
        return f"{self.device_type}({self.device_id}{where})"

    def sync(self) -> None:
        """Wait for the device (calls are synchronous in mlc: nothing to wait for)."""


def cpu(dev_id: int = 0) -> Device:
    """This machine's CPU (``mlc.cpu(0)``, TVM's ``tvm.cpu(0)``)."""
    if not isinstance(dev_id, int) or dev_id < 0:
        raise ArgumentError(f"a device index is a number >= 0, not {dev_id!r}")
    return Device("cpu", dev_id)


class NDArray(np.ndarray):
    """A numpy array with a ``device`` (see the module docstring)."""

    _mlc_device: Device

    def __array_finalize__(self, obj: Any) -> None:
        self._mlc_device = getattr(obj, "_mlc_device", None) or Device()

    @property  # type: ignore[override]  # numpy's own .device is the string "cpu"
    def device(self) -> Device:
        return self._mlc_device

    @device.setter
    def device(self, value: Device) -> None:
        self._mlc_device = value

    def numpy(self) -> np.ndarray:
        """A copy as a plain numpy array."""
        return np.array(self, copy=True).view(np.ndarray)

    def asnumpy(self) -> np.ndarray:
        """TVM's older name for :meth:`numpy`."""
        return self.numpy()

    def copyfrom(self, source: Any) -> NDArray:
        src = np.asarray(source)
        if src.shape != self.shape:
            raise ArgumentError(f"copyfrom: the source has shape {src.shape}, this array "
                                f"{self.shape}")
        self[...] = src
        return self

    def copyto(self, target: Any) -> Any:
        if isinstance(target, Device):
            return array(self, target)
        np.copyto(target, self)
        return target

    def __reduce__(self) -> Any:  # plain data across processes (the device stays here)
        return (np.asarray, (self.view(np.ndarray).copy(),))

    def __repr__(self) -> str:
        return f"<mlc.nd.NDArray shape={self.shape}, {self.device!r}>\n{self.view(np.ndarray)!r}"


def array(data: Any, device: Device | None = None, dtype: Any = None) -> NDArray:
    """A C-contiguous copy of ``data`` on ``device`` (default: this CPU). The dtype stays
    ``data``'s (numpy's float64 from ``np.random.uniform``) unless ``dtype`` is given."""
    if device is not None and not isinstance(device, Device):
        raise ArgumentError(f"mlc.nd.array(data, device): the device is mlc.cpu(0) or "
                            f"remote.cpu(0), not {device!r}")
    arr = np.array(data, dtype=dtype, order="C", copy=True).view(NDArray)
    arr.device = device or Device()
    return arr


def empty(shape: Any, dtype: Any = "float32", device: Device | None = None) -> NDArray:
    """An array of zeros (mlc never hands out uninitialised memory) on ``device``."""
    return array(np.zeros(shape, dtype), device)


__all__ = ["Device", "NDArray", "array", "cpu", "empty"]
