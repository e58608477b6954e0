"""Grade one submission: run it sandboxed under nbval, then decide outside it.

For each submission the grader

1. builds the *grading notebook*: the student's cells, each test cell's public code replaced
   by the instructor's (editing a test does not help), then one export cell per test (the
   hidden region of that test cell);
2. writes the inputs of every case into a fresh sandbox directory (the only thing the kernel
   receives: no tests, no references) and runs ``pytest --nbval-lax`` there, sandboxed, with
   a per-cell timeout; each cell's outcome is logged as soon as it is known;
3. decides, in this trusted process: a test scores only if its public cell and its export cell
   ran without error *and* every case of it passes the trusted check of ``grader.py`` on what
   was exported. A kernel that died, a timeout, a syntax error: the cells that did not run are
   failures, never passes.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import nbformat
import numpy as np

from autograder._nbval_log import OUTCOME_FD_ENV
from autograder.cases import NEEDS_REVIEW, Case, load_grader
from autograder.intake import TOO_LARGE, Refused, read_submission, too_large
from autograder.machine import job_running, machine_to_itself
from autograder.notebook import test_metadata
from autograder.sandbox import (
    Limits,
    SandboxUnavailable,
    acquire_uid,
    job_owner,
    missing_protections,
    prepare_dir,
    release_uid,
    remove_tree,
    run_sandboxed,
)

PACKAGE_DIR = Path(__file__).resolve().parent
DEFAULT_TESTS = PACKAGE_DIR / "tests"
REPO_ROOT = PACKAGE_DIR.parent


@dataclass
class TestResult:
    """The grade of one test cell."""

    id: str
    max_score: float
    score: float
    passed: bool
    public_message: str = ""
    hidden: list[tuple[str, bool, str, bool]] = field(default_factory=list)  # id, ok, msg, show
    review: list[str] = field(default_factory=list)  # cases whose timing could not decide

    def feedback(self) -> str:
        """Text for the student: public failures in full, hidden cases as pass/fail only."""
        lines = []
        if self.public_message:
            lines.append(self.public_message)
        for case_id, ok, message, show in self.hidden:
            verdict = "passed" if ok else "failed"
            lines.append(f"hidden test {case_id}: {verdict}" + (f" ({message})" if show else ""))
        return "\n".join(lines)


@dataclass
class SubmissionResult:
    student: str
    assignment: str
    tests: list[TestResult]
    status: str = "ok"  # ok, timeout, unreadable, too large, needs review or grader-error
    reason: str = ""  # for grader-error: what went wrong (the instructor re-grades)

    @property
    def score(self) -> float:
        return round(sum(t.score for t in self.tests), 4)

    @property
    def max_score(self) -> float:
        return sum(t.max_score for t in self.tests)


@dataclass
class GradingConfig:
    assignment: str
    tests_root: Path = DEFAULT_TESTS
    cell_timeout: float = 60.0
    memory_bytes: int | None = 4 << 30
    size: int | None = None
    hide: list[str] = field(default_factory=list)
    insecure: bool = False  # grade even when the namespaces are refused (limits only)
    max_bytes: int | None = 20 << 20  # a larger submission is refused before parsing

    @property
    def tests_dir(self) -> Path:
        return self.tests_root / self.assignment


def load_spec(config: GradingConfig) -> dict[str, Any]:
    path = config.tests_dir / "tests.json"
    if not path.is_file():
        raise FileNotFoundError(
            f"no grading tests for {config.assignment!r} in {config.tests_dir}; run "
            f"`python -m autograder generate {config.assignment}` first or pass --tests DIR"
        )
    spec: dict[str, Any] = json.loads(path.read_text())
    return spec


class UnreadableNotebook(ValueError):
    """The submission is a notebook nbformat reads, but not one that can be graded."""


def build_grading_notebook(submission: Any, spec: dict[str, Any]) -> tuple[Any, dict[str, int],
                                                                             dict[str, int]]:
    """The notebook that runs: student cells, canonical public tests, then export cells.

    Returns the notebook and, per test id, the code-cell number (nbval's ``Cell N``) of its
    public cell and of its export cell.
    """
    tests = {t["id"]: t for t in spec["tests"]}
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    public_cell: dict[str, int] = {}
    export_cell: dict[str, int] = {}
    code_count = 0
    for cell in submission.cells:
        if cell.get("cell_type") != "code":
            continue  # markdown cannot run; raw cells are dropped too
        meta = test_metadata(cell)
        test_id = meta.get("id") if meta else None
        if isinstance(test_id, str) and test_id in tests and test_id not in public_cell:
            source = tests[test_id]["public_source"] or "pass"
            public_cell[test_id] = code_count
        else:
            source = cell.get("source", "")
            if isinstance(source, list) and all(isinstance(line, str) for line in source):
                source = "".join(source)
            if not isinstance(source, str):
                raise UnreadableNotebook(f"code cell {code_count} has no text as its source "
                                         f"(a {type(source).__name__})")
        nb.cells.append(nbformat.v4.new_code_cell(source))
        code_count += 1
    for test_id, test in tests.items():
        if test_id not in public_cell:  # the student deleted the test cell: run it anyway
            nb.cells.append(nbformat.v4.new_code_cell(test["public_source"] or "pass"))
            public_cell[test_id] = code_count
            code_count += 1
    for test_id, test in tests.items():
        source = "from autograder import harness as grading\n" + test["hidden_source"]
        nb.cells.append(nbformat.v4.new_code_cell(source))
        export_cell[test_id] = code_count
        code_count += 1
    return nb, public_cell, export_cell


def _write_inputs(exchange: Path, cases: list[Any]) -> None:
    inputs = exchange / "inputs"
    inputs.mkdir(parents=True)
    for case in cases:
        if not isinstance(case, Case) and not getattr(case, "kernel_inputs", False):
            continue  # trace cases send nothing; graph cases send their graph as a parameter
        arrays = case.make_inputs()
        np.savez(inputs / f"{case.id}.npz", **arrays)
        (inputs / f"{case.id}.json").write_text(
            json.dumps({"names": list(arrays), "params": case.params}))


def _sandbox_env(box: Path, config: GradingConfig) -> dict[str, str]:
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(box / "home"), "TMPDIR": str(box / "tmp"),
        "PYTHONPATH": str(REPO_ROOT), "PYTHONDONTWRITEBYTECODE": "1",
        "AUTOGRADER_EXCHANGE": str(box / "exchange"),
            "MPLBACKEND": "Agg", "IPYTHONDIR": str(box / "home" / ".ipython"),
        "JUPYTER_CONFIG_DIR": str(box / "home" / ".jupyter"),
        "JUPYTER_DATA_DIR": str(box / "home" / ".local"),
        "JUPYTER_RUNTIME_DIR": str(box / "home" / "runtime"),
        "JUPYTER_PLATFORM_DIRS": "1",
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "2"),
        "OPENBLAS_NUM_THREADS": "1",
        "LANG": "C.UTF-8",
    }
    if config.size is not None:
        env["AUTOGRADER_SIZE"] = str(config.size)
    for name in ("MLC_NUM_THREADS",):
        if name in os.environ:
            env[name] = os.environ[name]
    return env


def read_outcomes(data: bytes) -> dict[int, tuple[str, str]]:
    """Cell outcomes as the trusted driver reported them on its pipe (first report wins)."""
    cells: dict[int, tuple[str, str]] = {}
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            entry = json.loads(line)
            cells.setdefault(int(entry["cell"]), (str(entry["outcome"]), str(entry["message"])))
        except (ValueError, KeyError, TypeError):
            continue
    return cells


EXPORT_CAP = 64 << 20  # bytes per exported file
EXPORT_TOTAL_CAP = 256 << 20  # bytes of all exports of one job together
EXPORT_MAX_FILES = 256


def export_names(cases: list[Any]) -> list[str]:
    """The only files of a job's exports folder the grader reads: ``<case id>.npy`` and
    ``<case id>.json`` of the assignment's cases."""
    return sorted(f"{case.id}.{ext}" for case in cases for ext in ("npy", "json"))


def collect_exports(box: Path, dest: Path, owner: int, cap: int = EXPORT_CAP,
                    names: list[str] | None = None,
                    total_cap: int = EXPORT_TOTAL_CAP) -> dict[str, str]:
    """Copy the job's exports into the grader's private ``dest``; return {name: why refused}.

    The job's folder is the student's: every step is opened without following a link, and only
    regular files that the job itself wrote (owner ``owner``, one link) and at most ``cap``
    bytes are taken. A link to a classmate's export, a hard link, a FIFO that would hang the
    grader or a huge file is refused, never read. With ``names`` (:func:`export_names`) only
    those files are looked at, and all of them together may hold ``total_cap`` bytes: a
    64 MiB sparse file costs the job no disk, and hundreds of them, copied as zeros, would
    fill the grader's.
    """
    refused: dict[str, str] = {}
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_DIRECTORY
    fds: list[int] = []
    try:
        fds.append(os.open(box, flags))
        for name in ("exchange", "exports"):
            fds.append(os.open(name, flags, dir_fd=fds[-1]))
    except OSError:
        for fd in fds:
            os.close(fd)
        return {"exports": "the exports folder was replaced (a link or not a folder)"}
    try:
        if names is None:
            names = sorted(os.listdir(fds[-1]))[:EXPORT_MAX_FILES]
        left = total_cap
        for name in names:
            why = _copy_export(fds[-1], name, dest, owner, min(cap, left))
            if why == "missing":
                continue
            if why.startswith("larger than") and left < cap:
                why = f"the exports together are larger than {total_cap} bytes"
            if why:
                refused[name] = why
            else:
                left -= (dest / name).stat().st_size
    finally:
        for fd in fds:
            os.close(fd)
    return refused


def _copy_export(dir_fd: int, name: str, dest: Path, owner: int, cap: int) -> str:
    if name.startswith(".") or "/" in name:
        return "not an export name"
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    except FileNotFoundError:
        return "missing"
    except OSError as err:
        return f"cannot be opened without following a link ({err.strerror})"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return "not a regular file"
        if st.st_uid != owner:
            return "not written by this job"
        if st.st_nlink != 1:
            return "a hard link"
        if st.st_size > cap:
            return f"larger than {cap} bytes"
        chunks: list[bytes] = []
        size = 0
        while size <= cap and (chunk := os.read(fd, 1 << 20)):
            chunks.append(chunk)
            size += len(chunk)
        if size > cap:
            return f"larger than {cap} bytes"
    finally:
        os.close(fd)
    with open(dest / name, "xb") as f:
        f.write(b"".join(chunks))
    return ""


def _not_run_reason(result: Any, cells: dict[int, tuple[str, str]]) -> str:
    if result.timed_out:
        return "the notebook ran out of time before this test ran"
    if result.over_disk:
        return f"{result.over_disk} and was stopped before this test ran"
    if result.over_memory:
        return f"{result.over_memory}; the largest was stopped before this test ran"
    if "Kernel dead" in result.output or "died" in result.output.lower():
        return "the kernel died (crash, out of memory or killed) before this test ran"
    return "this test did not run (the notebook stopped early)"


class GraderError(RuntimeError):
    """Grading this one submission failed for a reason that is not the student's."""


def grade_or_error(path: Path, config: GradingConfig,
                   workroot: Path | None = None) -> SubmissionResult:
    """:func:`grade_submission`, with a failure of the grader itself turned into a
    ``grader-error`` row (with the reason) instead of an aborted run."""
    try:
        return grade_submission(path, config, workroot)
    except Exception as err:  # noqa: BLE001 - whatever broke, the other rows must be written
        return error_result(path.stem, config, err)


def error_result(student: str, config: GradingConfig, err: BaseException) -> SubmissionResult:
    """The ``grader-error`` row of a submission whose grading failed (not the student's
    fault): every test at zero with the reason, so the instructor re-grades it."""
    reason = f"{type(err).__name__}: {str(err).strip().splitlines()[0] if str(err) else ''}"
    try:
        ids = [(t["id"], t["points"]) for t in load_spec(config)["tests"]]
    except Exception:  # noqa: BLE001
        ids = []
    tests = [TestResult(i, p, 0.0, False, f"not graded: {reason}") for i, p in ids]
    return SubmissionResult(student, config.assignment, tests, "grader-error", reason)


@dataclass(frozen=True)
class ShippedSubmission:
    """One grading job for a machine that shares no files with the grader: the notebook and
    the assignment's test folder travel as bytes (a Dask task's argument)."""

    student: str
    notebook: bytes
    tests: dict[str, bytes]  # path inside the assignment's test folder -> contents
    config: GradingConfig
    refused: tuple[str, str] | None = None  # (status, why) of a notebook not read or shipped

    @classmethod
    def pack(cls, path: Path, config: GradingConfig) -> ShippedSubmission:
        root = config.tests_dir
        tests = {str(p.relative_to(root)): p.read_bytes()
                 for p in sorted(root.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}
        try:  # a link, a FIFO or a notebook over the cap is never read, never shipped
            return cls(path.stem, read_submission(path, config.max_bytes), tests, config)
        except Refused as refused:
            return cls(path.stem, b"", tests, config, (refused.status, refused.why))


def grade_shipped(job: ShippedSubmission) -> SubmissionResult:
    """:func:`grade_or_error` on a worker: unpack the job into a private temporary folder
    (hidden from the student's code like the grader's own test folder), grade it there with
    the same sandbox, and leave nothing behind. Safe to run twice (Dask re-runs the task of a
    worker that died): it writes nothing outside that folder."""
    refused = Refused(*job.refused) if job.refused else None
    if refused is None and too_large(len(job.notebook), job.config.max_bytes):
        refused = Refused(TOO_LARGE, too_large(len(job.notebook), job.config.max_bytes))
    if refused is not None:
        result = refused_result(job.student, job.config, _spec_of(job), refused)
        result.student = job.student
        return result
    with tempfile.TemporaryDirectory(prefix="ag-shipped-") as tmp:
        root = Path(tmp)
        tests_root = root / "tests"
        for name, data in job.tests.items():
            dest = tests_root / job.config.assignment / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
        notebook = root / "submission" / f"{job.student}.ipynb"
        notebook.parent.mkdir()
        notebook.write_bytes(job.notebook)
        # the grader's own folders stay hidden too where this worker shares its file system
        # (a LocalCluster, a shared mount): only the unpacked copy was, and a notebook read
        # the instructor's tests folder (outside /tmp and the homes) in place
        hide = [*job.config.hide, str(job.config.tests_root), str(root)]
        config = replace(job.config, tests_root=tests_root, hide=hide)
        result = grade_or_error(notebook, config)
    result.student = job.student
    return result


def _spec_of(job: ShippedSubmission) -> dict[str, Any]:
    spec: dict[str, Any] = json.loads(job.tests["tests.json"])
    return spec


def grade_submission(path: Path, config: GradingConfig, workroot: Path | None = None,
                     keep: bool = False) -> SubmissionResult:
    """Grade one notebook; never raises for what is in the notebook.

    The job's folder (``job/``) and the grader's private folder (``trusted/``, where exports
    are copied and traces replayed) are siblings in a folder of the grader's: nothing the
    student creates in the job's folder can stand in the grader's way.
    """
    spec = load_spec(config)
    grader_path = config.tests_dir / "grader.py"
    grader = load_grader(grader_path)
    student = path.stem
    try:
        data = read_submission(path, config.max_bytes)
    except Refused as refusal:
        return refused_result(student, config, spec, refusal)
    try:
        submission = nbformat.reads(data.decode("utf-8"), as_version=4)
    except Exception as err:  # noqa: BLE001 - any unreadable file is the student's problem
        return _unreadable(student, config, spec, err)
    try:
        nb, public_cell, export_cell = build_grading_notebook(submission, spec)
    except UnreadableNotebook as err:  # nbformat reads a cell whose source is null
        return _unreadable(student, config, spec, err)
    run_root = Path(tempfile.mkdtemp(prefix=f"ag-{student[:20]}-", dir=workroot))
    box = run_root / "job"
    trusted_dir = run_root / "trusted"
    uid = acquire_uid()
    try:
        for sub in ("home", "tmp", "exchange/exports"):
            (box / sub).mkdir(parents=True, exist_ok=True)
        trusted_dir.mkdir(mode=0o700)
        grader_copy = stage_checks(config.tests_dir, trusted_dir / "check")
        all_cases = [grader.case(c) for t in spec["tests"] for c in t["case_ids"]]
        _write_inputs(box / "exchange", all_cases)
        nbformat.write(nb, str(box / "submission.ipynb"))
        (box / "pytest.ini").write_text("[pytest]\n")
        prepare_dir(box, uid)
        n_cells = len(nb.cells)
        limits = Limits(
            wall_s=min(60.0 + config.cell_timeout * n_cells, 3600.0),
            cpu_s=int(60 + config.cell_timeout * n_cells),
            memory_bytes=config.memory_bytes,
            hide=[str(config.tests_root), str(REPO_ROOT / "instructor"), *config.hide],
        )
        # -P: the driver never imports from the job's folder; -s: nor from a user site.
        cmd = [sys.executable, "-P", "-s", "-m", "pytest", "--nbval-lax", "--nbval-current-env",
               f"--nbval-cell-timeout={config.cell_timeout}", "-p", "autograder._nbval_log",
               "-p", "no:cacheprovider", "-c", "pytest.ini", "--rootdir", ".", "-q",
               "submission.ipynb"]
        # cover the folder of every job's folder ($TMPDIR, or workroot), not only this job's:
        # where it is not /tmp (a cluster's scratch), the jobs beside were visible, and as an
        # ordinary user (one user id for all jobs) readable
        with job_running():  # never beside another submission's speed timing
            result = run_sandboxed(cmd, box, _sandbox_env(box, config), limits, uid,
                                   cover=[str(run_root.parent)], outcome_env=OUTCOME_FD_ENV)
        missing = missing_protections(result.status, config.insecure)
        if result.status.get("error") or missing or not result.status:
            raise SandboxUnavailable(
                result.status.get("error") or f"protections missing: {', '.join(missing)}"
                if result.status else f"the sandbox did not start ({result.output[-300:]})")
        cells = read_outcomes(result.outcomes)
        if not cells and not result.timed_out:
            tail = " / ".join(result.output.strip().splitlines()[-3:])
            raise GraderError(f"the notebook driver reported no cell at all ({tail})")
        status = ("timeout" if result.timed_out else "disk limit" if result.over_disk
                  else "memory limit" if result.over_memory else "ok")
        exports = trusted_dir / "exports"
        exports.mkdir()
        refused = collect_exports(box, exports, job_owner(uid), names=export_names(all_cases))
        tests = [
            _decide(test, cells, public_cell, export_cell, grader, grader_copy, exports,
                    trusted_dir, result, config, refused)
            for test in spec["tests"]
        ]
        if keep:
            (run_root / "sandbox_output.txt").write_text(result.output)
        review = [f"{t.id} ({', '.join(t.review)})" for t in tests if t.review]
        if review and status == "ok":  # a provisional speed credit: the instructor decides
            return SubmissionResult(student, config.assignment, tests, NEEDS_REVIEW,
                                    "the timing could not decide the speed credit of "
                                    f"{'; '.join(review)}: re-grade on a quieter machine")
        return SubmissionResult(student, config.assignment, tests, status)
    finally:
        release_uid(uid)
        if not keep:
            remove_tree(run_root)


def stage_checks(tests_dir: Path, dest: Path) -> Path:
    """Copy the assignment's trusted checks (``grader.py`` and the helper modules beside it,
    nothing else: never ``tests.json`` or a notebook) into ``dest``, the grader's private
    folder of this job; return the copy of ``grader.py``.

    A trusted step (a trace replay, a program run) sees only its own folder, a private
    ``/tmp`` and the interpreter: a tests folder under ``/tmp``, ``/var/tmp``, ``/dev/shm`` or
    ``/run`` (as on every Dask worker, which unpacks the tests into ``/tmp``) was invisible
    to it, so every replay failed and the whole class scored 0, the reference solution too.
    What a step needs travels with the step instead.
    """
    dest.mkdir(mode=0o700)
    for path in sorted(tests_dir.iterdir()):
        if path.suffix == ".py" and path.is_file():
            (dest / path.name).write_bytes(path.read_bytes())
    grader = dest / "grader.py"
    if not grader.is_file():
        raise FileNotFoundError(f"{tests_dir} has no grader.py (the assignment's checks)")
    return grader


def refused_result(student: str, config: GradingConfig, spec: dict[str, Any],
                   refused: Refused) -> SubmissionResult:
    """A submission that was not read (:mod:`autograder.intake`): every test 0, status
    ``too large`` or ``unreadable``, the reason in its feedback and the gradebook."""
    tests = [TestResult(t["id"], t["points"], 0.0, False, f"not graded: {refused.why}")
             for t in spec["tests"]]
    return SubmissionResult(student, config.assignment, tests, refused.status, refused.why)


def _unreadable(student: str, config: GradingConfig, spec: dict[str, Any],
                err: Exception) -> SubmissionResult:
    tests = [TestResult(t["id"], t["points"], 0.0, False, f"notebook unreadable: {err}")
             for t in spec["tests"]]
    return SubmissionResult(student, config.assignment, tests, "unreadable")


def _decide(test: dict[str, Any], cells: dict[int, tuple[str, str]], public_cell: dict[str, int],
            export_cell: dict[str, int], grader: Any, grader_path: Path, exports: Path,
            trusted_dir: Path, result: Any, config: GradingConfig,
            refused: dict[str, str]) -> TestResult:
    test_id = test["id"]
    res = TestResult(test_id, test["points"], 0.0, False)
    public = cells.get(public_cell[test_id])
    exported = cells.get(export_cell[test_id])
    if public is None or exported is None:
        res.public_message = _not_run_reason(result, cells)
        res.hidden = [(c, False, "", False) for c in test["case_ids"]]
        return res
    if public[0] != "passed":
        message = public[1] or "error"
        if "Kernel dead" in message or "kernel died" in message.lower():
            message = "the kernel died (crash, out of memory or killed) before this test ran"
        res.public_message = f"public test failed: {message}"
    fractions = []
    for case_id in test["case_ids"]:
        case = grader.case(case_id)
        show = bool(getattr(case, "show_message", False))
        if exported[0] != "passed":
            fraction, message = 0.0, f"the hidden test raised: {exported[1]}"
        else:
            timed = bool(getattr(case, "speed", False))
            fraction, message, *flags = case.check_export(
                exports, grader_path=grader_path, workdir=trusted_dir,
                run_trusted=lambda cmd, cwd, timed=timed: _run_trusted(cmd, cwd, config, timed))
            if NEEDS_REVIEW in flags:
                res.review.append(case_id)
            why = [f"{n}: {w}" for n, w in refused.items() if n.split(".")[0] == case_id]
            if fraction == 0.0 and why:
                message = f"the export was refused ({why[0]})"
        fractions.append(fraction)
        res.hidden.append((case_id, fraction >= 1.0, message, show))
    fraction = min(fractions) if fractions else 0.0
    if public[0] != "passed" or exported[0] != "passed":
        fraction = 0.0
    res.score = round(test["points"] * fraction, 4)
    res.passed = fraction >= 1.0
    return res


def _run_trusted(cmd: list[str], cwd: Path, config: GradingConfig,
                 timed: bool = False) -> tuple[int, str]:
    """Trusted code on student data (a trace replay): limits and no network, no uid change.
    A replay that times (``timed``) has the machine to itself while it runs (no other timing,
    no notebook, no other check: :mod:`autograder.machine`), whatever runs the jobs
    (``--jobs``, a Dask cluster); the others run beside other jobs, never beside a timing."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(REPO_ROOT),
           "HOME": str(cwd), "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "2")}
    if config.size is not None:
        env["AUTOGRADER_SIZE"] = str(config.size)
    for name in ("MLC_NUM_THREADS",):
        if name in os.environ:
            env[name] = os.environ[name]
    limits = Limits(wall_s=max(120.0, config.cell_timeout * 4), cpu_s=600,
                    memory_bytes=config.memory_bytes, nproc=None)
    # The trusted side: it reads grader.py wherever it lives, so the grader's home stays.
    with machine_to_itself() if timed else job_running():
        result = run_sandboxed(cmd, cwd, env, limits, uid=None, cover=[], cover_home=False)
    return result.returncode, result.output
