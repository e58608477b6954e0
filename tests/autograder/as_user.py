"""Run a command as an ordinary user (root only): ``python as_user.py UID -- CMD...``.

The tests use it to grade again as a normal user would. When the interpreter lives under a
private folder (``/root/.pyenv``), a new mount namespace covers that folder with an empty
tmpfs and binds the interpreter back, read-only, so the user can start it; nothing else of
the private folder becomes visible. Then the user id is dropped for good and CMD is exec'd.
"""

from __future__ import annotations

import os
import sys

from autograder._sandbox_exec import (
    CLONE_NEWNS,
    MS_BIND,
    MS_PRIVATE,
    MS_RDONLY,
    MS_REC,
    MS_REMOUNT,
    O_PATH,
    _libc,
    _make_mountpoint,
    _mount,
    _private_ancestor,
)


def reachable(uid: int, path: str) -> bool:
    return _private_ancestor(os.path.realpath(path), uid) is None


def main(argv: list[str]) -> int:
    uid = int(argv[0])
    cmd = argv[2:]
    needed = {os.path.realpath(p) for p in (sys.base_prefix, sys.prefix)}
    needed = {p for p in needed if not any(p != q and p.startswith(q + "/") for q in needed)}
    private = {p: _private_ancestor(p, uid) for p in needed}
    if any(private.values()):
        libc = _libc()
        assert libc is not None and libc.unshare(CLONE_NEWNS) == 0, "cannot unshare"
        _mount(libc, None, "/", None, MS_REC | MS_PRIVATE)
        fds = {p: os.open(p, O_PATH) for p, a in private.items() if a}
        for ancestor in sorted({a for a in private.values() if a}):
            _mount(libc, "tmpfs", ancestor, "tmpfs", 0, "mode=755,size=1m")
        for path, fd in fds.items():
            ancestor = private[path]
            assert ancestor is not None
            _make_mountpoint(path, ancestor, fd)
            _mount(libc, f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
            _mount(libc, None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY)
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)
    os.execvp(cmd[0], cmd)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
