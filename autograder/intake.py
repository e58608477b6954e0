"""Take in a submission file: what the grader reads of it before anything parses it.

A submission is a file a student made, in a folder an instructor unpacked (a tar archive
keeps links). Before this, ``nbformat.read`` followed whatever the path was: a 100 MB
notebook took the unsandboxed grader to 392 MB, a link to ``/dev/zero`` or a FIFO never
ended, and a link to a file of the grader's (``/root/.ssh/id_rsa``) came back in the
feedback's "not JSON" message (nbformat quotes the first characters). Here the file is opened
without following a link, must be a regular file, and at most ``max_bytes`` are read.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

TOO_LARGE = "too large"
UNREADABLE = "unreadable"


class Refused(Exception):
    """The submission is not read: ``status`` (``too large`` or ``unreadable``) and why."""

    def __init__(self, status: str, why: str) -> None:
        super().__init__(why)
        self.status = status
        self.why = why


def too_large(size: int, max_bytes: int | None) -> str:
    """Why a submission of ``size`` bytes is refused ("" when it is not)."""
    if max_bytes is None or size <= max_bytes:
        return ""
    return (f"the notebook is {size / 1e6:.1f} MB, more than the {max_bytes / 1e6:g} MB a "
            "submission may have (clear large outputs: Kernel > Restart & Clear Output)")


def read_submission(path: Path, max_bytes: int | None) -> bytes:
    """The bytes of the submission at ``path``; :class:`Refused` when it is a link, not a
    regular file, or larger than ``max_bytes`` (checked on the open file, and again while
    reading, so a file that grows meanwhile is refused too)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as err:
        if os.path.islink(path):
            raise Refused(UNREADABLE, "the submission is a link, not a file (hand in the "
                          "notebook itself)") from None
        raise Refused(UNREADABLE, f"the submission cannot be opened ({err.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Refused(UNREADABLE, "the submission is not a regular file")
        why = too_large(info.st_size, max_bytes)
        if why:
            raise Refused(TOO_LARGE, why)
        limit = info.st_size + 1 if max_bytes is None else max_bytes + 1
        chunks: list[bytes] = []
        size = 0
        while size < limit and (chunk := os.read(fd, min(1 << 20, limit - size))):
            chunks.append(chunk)
            size += len(chunk)
        why = too_large(size, max_bytes)
        if why:
            raise Refused(TOO_LARGE, why)
        return b"".join(chunks)
    finally:
        os.close(fd)
