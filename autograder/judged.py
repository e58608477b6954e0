"""Judged steps: what a submission exported is parsed, compiled, run and timed on the
student's side of the wall.

A check of an export has two halves. The trusted half (the grader's runner, which loaded
``grader.py``) draws the inputs and computes the reference's answer; the judged half
(:func:`run_judged`) gets only the export and the inputs and runs with every wall of a
notebook job (:mod:`autograder.sandbox`) and no capability at all. It writes its outputs;
the trusted half reads them back (:func:`read_job_file`: no links, its own files only,
capped) and decides. ``python -m MODULE --judge in out`` is each check's judged entry point:
:mod:`autograder.program` (te programs), :mod:`autograder.graphio` (graphs),
:mod:`autograder.judge_trace` (schedule traces).
"""

from __future__ import annotations

import io
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from autograder.cases import parse_json
from autograder.sandbox import (
    PROTECTIONS,
    Limits,
    SandboxResult,
    is_root,
    job_owner,
    keep_paths,
    missing_protections,
    prepare_dir,
    release_uid,
    remove_tree,
    run_sandboxed,
)

# Never visible to a step that judges a student's export: the instructor's solutions and
# the tests shipped with the grader (each step adds the assignment's own tests folder).
JUDGE_HIDE = (str(Path(__file__).resolve().parent.parent / "instructor"),
              str(Path(__file__).resolve().parent / "tests"))
JUDGE_RESULT = "result.json"
INSECURE_ENV = "AUTOGRADER_INSECURE"  # "1" in a check's runner when grading with --insecure


@dataclass
class Judged:
    """What a judged step (:func:`run_judged`) left: ``result`` is the JSON object it wrote
    (None if it wrote none), ``files`` the other outputs asked for. ``problem`` says why the
    step could not judge for a reason that is not the export's (the sandbox did not start,
    or lacked a wall): the caller stops with it, never grades. ``failure`` says what stopped
    the export's own step (time, memory, a crash, an output it may not leave): a failed
    check, with the reason for the student."""

    result: dict[str, Any] | None
    files: dict[str, bytes]
    status: dict[str, Any]
    output: str
    problem: str = ""
    failure: str = ""


def judge_uid() -> int | None:
    """A fresh unprivileged user id for one judged step (root only; None otherwise).

    Drawn at random among 2**30 ids rather than from the process id (:func:`acquire_uid`):
    a judged step is started from inside the trusted runner's PID namespace, where every
    job's runner has the same small process ids."""
    if not is_root():
        return None
    import secrets

    from autograder import sandbox

    with sandbox._uid_lock:
        while True:
            uid = (1 << 30) + secrets.randbelow(1 << 30)
            if uid not in sandbox._uids_in_use:
                sandbox._uids_in_use.add(uid)
                return uid


def run_judged(module: str, workdir: Path, inputs: dict[str, bytes], *,
               outputs: tuple[str, ...] = (), hide: list[str] | None = None,
               wall_s: float = 100.0, memory_bytes: int | None = None,
               cap: int = 64 << 20) -> Judged:
    """Run ``python -m MODULE --judge in out`` on the student's side of the wall.

    Every step that parses, compiles, runs or times what a submission exported (a program,
    a trace, a graph) runs here, never in a process that can see the reference: its own
    unprivileged user id (root), no capability, ``no_new_privs`` and the seccomp filter,
    private /tmp, /proc and network, the memory cgroup of the job it belongs to (inherited),
    and a file system that is read-only but for its own ``out`` folder, holding only
    ``inputs`` (copied into ``in/``, read-only to it) and the interpreter and repository
    (read-only); ``workdir`` (the grader's private folder), ``hide`` (the assignment's
    tests) and :data:`JUDGE_HIDE` are covered. The caller keeps the reference and compares:
    it reads ``out/result.json`` (a JSON object) and ``outputs`` (each at most ``cap``
    bytes), opened without following links and only if the step's own user wrote them.
    """
    import shutil

    folder = Path(tempfile.mkdtemp(prefix="judge-", dir=workdir))
    os.chmod(folder, 0o755)
    uid = judge_uid()
    try:
        (folder / "in").mkdir()
        for name, data in inputs.items():
            path = folder / "in" / name
            path.write_bytes(data)
            os.chmod(path, 0o444)
        os.chmod(folder / "in", 0o555)
        (folder / "out").mkdir()
        prepare_dir(folder / "out", uid)
        env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
               "PYTHONPATH": str(Path(__file__).resolve().parent.parent),
               "HOME": str(folder / "out"), "TMPDIR": "/tmp", "PYTHONDONTWRITEBYTECODE": "1",
               "LANG": "C.UTF-8", "OPENBLAS_NUM_THREADS": "1",
               "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "2")}
        for name in ("MLC_NUM_THREADS", "AUTOGRADER_SIZE"):
            if name in os.environ:
                env[name] = os.environ[name]
        # a hide above these would hide Python or the step's own folder (the checks copied
        # into the grader's folder: covered anyway)
        needed = [*(p for p, _ in keep_paths()), str(folder.resolve())]
        hidden = [h for h in [*(hide or []), *JUDGE_HIDE]
                  if not any(p == h or p.startswith(h.rstrip("/") + "/") for p in needed)]
        limits = Limits(wall_s=wall_s, cpu_s=int(wall_s) + 10, memory_bytes=memory_bytes,
                        nproc=1024 if uid is not None else 256, hide=hidden)
        cmd = [sys.executable, "-P", "-s", "-m", module, "--judge", "in", "out"]
        # the grader's own home (its runner's $HOME is the grader's folder, not the home)
        import pwd

        homes = {pwd.getpwuid(os.getuid()).pw_dir, os.path.expanduser("~")} - {"/"}
        result = run_sandboxed(cmd, folder, env, limits, uid,
                               cover=[str(workdir), *sorted(homes)])
        problem = _judge_problem(result)
        failure = ("checking the export ran out of time" if result.timed_out
                   else result.over_memory)
        found: dict[str, bytes] = {}
        owner = job_owner(uid)
        for name in (JUDGE_RESULT, *outputs):
            got = read_job_file(folder / "out", name, owner, cap)
            if isinstance(got, bytes):
                found[name] = got
            elif got != "missing" and not failure:
                failure = f"the check's output {name} was refused ({got})"
        parsed: dict[str, Any] | None = None
        if JUDGE_RESULT in found:
            try:
                value = parse_json(found.pop(JUDGE_RESULT)[:1 << 20])
                parsed = value if isinstance(value, dict) else None
            except (ValueError, UnicodeDecodeError):
                parsed = None
        if parsed is None and not failure:
            tail = " / ".join(result.output.strip().splitlines()[-2:]) or "no output"
            failure = f"checking the export stopped without a result ({tail})"
        if failure:
            parsed, found = None, {}
        return Judged(parsed, found, result.status, result.output, problem, failure)
    finally:
        release_uid(uid)
        remove_tree(folder)
        if os.path.lexists(folder):
            shutil.rmtree(folder, ignore_errors=True)


GRADER_ERROR = "GRADER-ERROR: "  # how a check's runner says its judged step could not start


class JudgeUnavailable(RuntimeError):
    """A judged step could not judge for a reason that is not the export's (it could not
    start with every wall, or reported nothing the trusted side can use): the check was not
    made, and a grade would be a lie. A check's runner says so (:func:`grader_error`)."""


def grader_error(err: BaseException) -> int:
    """Print ``err`` as a :data:`GRADER_ERROR` line for the grader and return the runner's
    exit status (3): :func:`raise_if_grader_error` turns it into a ``grader-error`` row."""
    print(f"{GRADER_ERROR}{err}", file=sys.stderr)
    return 3


def pack_arrays(arrays: dict[str, Any]) -> bytes:
    """``arrays`` as the bytes of an ``.npz`` archive: a judged step's inputs."""
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)  # type: ignore[arg-type]  # numpy's stub: names as keywords
    return buffer.getvalue()


def unpack_arrays(path: Path, names: list[str]) -> dict[str, Any]:
    """The arrays ``names`` of the ``.npz`` at ``path`` (what :func:`pack_arrays` wrote), in
    that order: the judged step's side."""
    with np.load(path, allow_pickle=False) as data:
        return {name: np.array(data[name]) for name in names}


def read_npy(data: bytes | None, shape: tuple[int, ...], dtype: Any = None) -> Any:
    """The ``.npy`` array in ``data`` (bytes a judged step wrote) if its header says
    ``shape`` and ``dtype`` (with ``dtype=None``: any number or bool type); else why not, as a
    phrase ("is missing", "cannot be read: ...", "is float64[3], not float32[4]"). The
    header is read first: ``np.load`` of a header that claims 4 TiB allocates them before it
    finds the data short."""
    from numpy.lib import format as npy

    if data is None:
        return "is missing"
    f = io.BytesIO(data)
    try:
        version = npy.read_magic(f)
        if version == (1, 0):
            got_shape, _, got_dtype = npy.read_array_header_1_0(f)
        elif version == (2, 0):
            got_shape, _, got_dtype = npy.read_array_header_2_0(f)
        else:
            return f"cannot be read: .npy version {version}"
    except (ValueError, EOFError, SyntaxError, TypeError) as err:
        return f"cannot be read: {str(err)[:200]}"
    ok_dtype = (got_dtype.kind in "fiub" and not got_dtype.hasobject if dtype is None
                else got_dtype == np.dtype(dtype))
    want = (str(np.dtype(dtype)) if dtype is not None else
            str(got_dtype) if ok_dtype else "a number type")
    if tuple(got_shape) != tuple(shape) or not ok_dtype:
        return f"is {str(got_dtype)[:40]}{list(got_shape)[:8]}, not {want}{list(shape)}"
    try:
        out = np.load(io.BytesIO(data), allow_pickle=False)
    except (ValueError, OSError, EOFError) as err:
        return f"cannot be read: {str(err)[:200]}"
    return out if isinstance(out, np.ndarray) else "is not an array"


def raise_if_grader_error(output: str) -> None:
    """Raise :class:`~autograder.sandbox.SandboxUnavailable` with the reason when a check's
    runner (``python -m autograder.program|graphio|replay``) printed :data:`GRADER_ERROR`:
    the export was not judged, and a zero would be a lie (the grader turns it into a
    ``grader-error`` row naming what failed)."""
    from autograder.sandbox import SandboxUnavailable

    for line in output.splitlines():
        if line.startswith(GRADER_ERROR):
            raise SandboxUnavailable(line[len(GRADER_ERROR):])


def _judge_problem(result: SandboxResult) -> str:
    if not result.status or result.status.get("error"):
        return ("the sandbox for checking the export did not start: "
                f"{result.status.get('error') or result.output.strip()[-300:]}")
    # ``grade --insecure`` (its runner's environment says so): the walls that are there
    missing = missing_protections(result.status, os.environ.get(INSECURE_ENV) == "1")
    if missing:
        return ("the sandbox for checking the export lacks: "
                + "; ".join(PROTECTIONS[m] for m in missing))
    return ""


def read_job_file(folder: Path, name: str, owner: int, cap: int) -> bytes | str:
    """The bytes of ``folder/name`` if it is a regular file that user ``owner`` wrote, with
    one link and at most ``cap`` bytes, opened without following a link; else why not
    (``"missing"`` when there is none)."""
    import stat

    try:
        dir_fd = os.open(folder, os.O_RDONLY | os.O_NOFOLLOW | os.O_DIRECTORY)
    except OSError as err:
        return f"its folder cannot be opened ({err.strerror})"
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    except FileNotFoundError:
        return "missing"
    except OSError as err:
        return f"cannot be opened without following a link ({err.strerror})"
    finally:
        os.close(dir_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != owner or st.st_nlink != 1:
            return "not a regular file of its own"
        chunks, size = [], 0
        while size <= cap and (chunk := os.read(fd, 1 << 20)):
            chunks.append(chunk)
            size += len(chunk)
        return f"larger than {cap} bytes" if size > cap else b"".join(chunks)
    finally:
        os.close(fd)
