"""Command line: ``python -m autograder {generate,grade,check,doctor} ...``.

    python -m autograder generate a1_tensor_expressions
    python -m autograder grade --assignment a1_tensor_expressions --out grades/ \\
        [--tests DIR] [--timeout S] [--jobs N] [--size N] submissions/*.ipynb
    python -m autograder grade ... --scheduler tcp://HOST:8786   # on a Dask cluster
    python -m autograder grade ... --cluster local:4             # on a LocalCluster
    python -m autograder check my_a1.ipynb        # a student runs the public tests
    python -m autograder doctor                   # can this machine grade, and how safely?

``grade`` first starts one job exactly as grading will (``doctor`` does the same and prints
it): if the job user cannot start the interpreter or a protection is missing, the run stops
before anyone is graded, with the reason (exit status 3). Then it grades the reference
solution through the same path (:mod:`autograder.reference`) and stops unless it gets full
marks (exit status 4, naming the tests that failed and their feedback);
``--skip-reference-check`` skips that, and ``grades.csv`` says so. A submission whose
grading fails for a reason that is not the student's gets a ``grader-error`` row; the others
are graded (exit status 1); so is a speed credit the timing could not decide (status
``needs review``). A submission over ``--max-size-mb`` (20) is not parsed: status
``too large``. A name whose feedback folder would be the grader's own output
(``grades.csv.ipynb``) stops the run before anyone is graded (exit status 2).

The jobs run on one executor (``mlc.tune.executor``, as tuning's measurements do): ``--jobs N``
threads here by default, or the workers of a Dask cluster, each of which first runs the same
sandbox check, and then every job in the same sandbox as a local job. A job whose worker dies
is run again on another worker; every submission gets exactly one row.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from tqdm import tqdm


def _cmd_generate(args: argparse.Namespace) -> int:
    from autograder.generate import generate

    for name in args.names:
        for path in generate(name):
            print(f"wrote {path}")
    return 0


def _worker_preflight(insecure: bool) -> tuple[bool, str]:
    """Run on each Dask worker: can it grade, with every protection a job needs?"""
    from autograder.sandbox import explain, preflight

    report = preflight(insecure=insecure)
    return report.ok, "" if report.ok else explain(report)


def _open_executor(args: argparse.Namespace) -> Any:
    """``--jobs N`` threads here, or a Dask cluster (``--scheduler`` / ``--cluster``)."""
    from mlc.tune.executor import DaskExecutor, LocalExecutor

    if getattr(args, "executor", None) is not None:
        return args.executor  # main(..., executor=DaskExecutor(client)): the caller's cluster
    if args.scheduler or args.cluster:
        return DaskExecutor.connect(args.scheduler, cluster=args.cluster,
                                    timeout=args.connect_timeout)
    return LocalExecutor(args.jobs)


def _cmd_grade(args: argparse.Namespace) -> int:
    from autograder.grade import (
        DEFAULT_TESTS,
        GradingConfig,
        ShippedSubmission,
        error_result,
        grade_or_error,
        grade_shipped,
        load_spec,
    )
    from autograder.reference import (
        SKIPPED,
        ReferenceCheckFailed,
        check_reference,
        find_reference,
        passed_note,
    )
    from autograder.report import REFERENCE_FOLDER, reserved_name, write_gradebook, write_student
    from autograder.sandbox import explain, preflight
    from mlc.errors import ClusterError
    from mlc.tune.executor import DaskExecutor

    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    config = GradingConfig(
        assignment=args.assignment,
        tests_root=Path(args.tests).resolve() if args.tests else DEFAULT_TESTS,
        cell_timeout=args.timeout,
        memory_bytes=int(args.memory_mb) << 20 if args.memory_mb else None,
        size=args.size,
        hide=[str(out)],
        insecure=args.insecure,
        max_bytes=int(args.max_size_mb * 1e6),
    )
    load_spec(config)  # a missing assignment stops here, with its own message
    paths = [Path(os.path.abspath(p)) for p in args.submissions]  # a link stays a link
    stems = [p.stem for p in paths]
    duplicates = {s for s in stems if stems.count(s) > 1}
    if duplicates:
        print(f"two submissions share a name: {sorted(duplicates)}", file=sys.stderr)
        return 2
    unusable = sorted(str(p) for p in paths if p.stem.strip(".") == "")
    if unusable:  # "...ipynb" is student "..": its feedback would land beside the output folder
        print(f"a submission's name cannot name its feedback folder: {unusable} (rename it)",
              file=sys.stderr)
        return 2
    undecodable = sorted(repr(p.name) for p in paths if not _utf8(p.stem))
    if undecodable:  # written into grades.csv and feedback.md after everyone was graded
        print(f"a submission's name is not valid UTF-8: {undecodable} (rename it)",
              file=sys.stderr)
        return 2
    taken = sorted(f"{p} (would be {out / reserved_name(p.stem)})" for p in paths
                   if reserved_name(p.stem))
    if taken:  # grades.csv.ipynb made out/grades.csv/ and no gradebook could be written
        print(f"a submission's feedback folder would take the place of the grader's own "
              f"output: {taken}; rename it", file=sys.stderr)
        return 2
    reference = None
    if not args.skip_reference_check:
        try:
            reference = find_reference(config, args.reference)
        except ReferenceCheckFailed as err:
            print(f"error: {err}", file=sys.stderr)
            return 4
        _hide_reference(config, reference)
    try:
        executor = _open_executor(args)
    except ClusterError as err:
        print(f"error: {err}", file=sys.stderr)
        return 3
    results = []
    with executor:
        remote = isinstance(executor, DaskExecutor)
        if remote:  # every worker must pass the check a local run passes here
            checks = executor.run_on_workers(_worker_preflight, args.insecure)
            failed = {w: text for w, (ok, text) in checks.items() if not ok}
            if not checks or failed:
                for worker, text in failed.items():
                    print(f"worker {worker}:\n{text}", file=sys.stderr)
                print("no Dask worker can grade" if not checks else
                      f"{len(failed)} of {len(checks)} Dask workers cannot grade",
                      file=sys.stderr)
                return 3
            if not args.quiet:
                print(f"grading on {executor.describe()}")
        else:
            report = preflight(insecure=args.insecure, hide=[str(config.tests_root), str(out)])
            if not report.ok:
                print(explain(report), file=sys.stderr)
                return 3
        reference_note = SKIPPED
        if reference is not None:
            where = (executor.describe() if remote else
                     f"local jobs, --jobs {args.jobs}, tests {config.tests_dir}")
            if not args.quiet:
                print(f"grading the reference solution {reference} first ({where})")
            try:
                checked = check_reference(executor, config, reference, remote, where)
            except ReferenceCheckFailed as err:
                print(err, file=sys.stderr)
                return 4
            reference_note = passed_note(checked)
            checked.student = REFERENCE_FOLDER
            write_student(out, checked)
        futures = {
            (executor.submit(grade_shipped, ShippedSubmission.pack(p, config)) if remote
             else executor.submit(grade_or_error, p, config)): p
            for p in paths
        }
        for future in tqdm(executor.as_completed(futures), total=len(futures),
                           desc=f"grading {args.assignment}", unit="notebook",
                           disable=args.quiet):
            try:
                result = future.result()
            except Exception as err:  # noqa: BLE001 - e.g. KilledWorker: the job kept dying
                result = error_result(futures[future].stem, config, err)
            write_student(out, result)
            results.append(result)
    book = write_gradebook(out, results, reference_note)
    if not args.quiet:
        for r in sorted(results, key=lambda r: r.student):
            print(f"{r.student}: {r.score:g} / {r.max_score:g} ({r.status})")
        print(f"wrote {book}")
    for r in sorted(results, key=lambda r: r.student):
        if r.status == "needs review":
            print(f"needs review: {r.student}: {r.reason}", file=sys.stderr)
    errors = [r for r in results if r.status == "grader-error"]
    for r in errors:
        print(f"grader-error for {r.student}: {r.reason} (re-grade it)", file=sys.stderr)
    review = [r for r in results if r.status == "needs review"]
    return 1 if errors or review else 0  # some rows are not final grades yet


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # a byte that is not UTF-8, kept by Python as a surrogate
        return False
    return True


def _hide_reference(config: Any, reference: Path) -> None:
    """A reference given with --reference, outside the folders every job has hidden: its
    folder is hidden too, unless the repository or the interpreter lives under it."""
    from autograder.grade import REPO_ROOT

    folder = reference.parent
    needed = [REPO_ROOT, Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()]
    if not any(p == folder or folder in p.parents for p in needed):
        config.hide.append(str(folder))


def _cmd_doctor(args: argparse.Namespace) -> int:
    from autograder.sandbox import PROTECTIONS, explain, is_root, preflight, required_protections

    report = preflight(insecure=args.insecure)
    who = "root: each job gets its own user id" if is_root() else "an ordinary user"
    print(f"grading as {who}; interpreter {sys.executable}")
    required = required_protections(args.insecure)
    for name, text in PROTECTIONS.items():
        active = bool(report.status.get(name))
        need = " (required)" if name in required else ""
        print(f"  [{'x' if active else ' '}] {text}{need}")
    probe = report.probe
    if probe:
        print(f"  a job sees {probe.get('processes_seen')} process(es) in /proc; imports: "
              f"{probe.get('imports')}")
    if not report.ok:
        print(explain(report), file=sys.stderr)
        return 3
    if args.skip_reference_check:
        print("grading works on this machine (the sandbox; no reference solution was graded: "
              "--skip-reference-check)")
        return 0
    print("the sandbox works on this machine; grading each assignment's reference solution")
    return _doctor_references(args)


def _doctor_references(args: argparse.Namespace) -> int:
    """Grade each assignment's reference solution as ``grade`` would before a class: in
    local jobs, or on the Dask cluster that ``--scheduler``/``--cluster`` name."""
    from autograder.grade import DEFAULT_TESTS, GradingConfig
    from autograder.reference import ReferenceCheckFailed, check_reference, find_reference
    from mlc.errors import ClusterError
    from mlc.tune.executor import DaskExecutor

    root = Path(args.tests).resolve() if args.tests else DEFAULT_TESTS
    names = args.assignment or sorted(p.name for p in root.iterdir()
                                      if (p / "tests.json").is_file())
    try:
        executor = _open_executor(args)
    except ClusterError as err:
        print(f"error: {err}", file=sys.stderr)
        return 3
    failed = 0
    with executor:
        remote = isinstance(executor, DaskExecutor)
        if remote:
            checks = executor.run_on_workers(_worker_preflight, args.insecure)
            bad = {w: text for w, (ok, text) in checks.items() if not ok}
            for worker, text in bad.items():
                print(f"worker {worker}:\n{text}", file=sys.stderr)
            if not checks or bad:
                print("no Dask worker can grade" if not checks else
                      f"{len(bad)} of {len(checks)} Dask workers cannot grade", file=sys.stderr)
                return 3
        for name in names:
            config = GradingConfig(assignment=name, tests_root=root, cell_timeout=args.timeout,
                                   memory_bytes=int(args.memory_mb) << 20, size=args.size,
                                   insecure=args.insecure)
            where = (executor.describe() if remote else "a local job") + \
                f", tests {config.tests_dir}"
            try:
                result = check_reference(executor, config, find_reference(config), remote,
                                         where)
            except (ReferenceCheckFailed, FileNotFoundError) as err:
                print(f"{name}: FAILED\n{err}", file=sys.stderr)
                failed += 1
                continue
            print(f"{name}: the reference solution gets full marks "
                  f"({result.score:g} / {result.max_score:g}) on {where}")
    if failed:
        print(f"{failed} of {len(names)} assignments cannot be graded right on this machine",
              file=sys.stderr)
        return 4
    print("grading works on this machine")
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    from autograder.check import check_notebook

    return check_notebook(Path(args.notebook), timeout=args.timeout)


def _megabytes(text: str) -> float:
    """``--max-size-mb``: a positive, finite number (0 would have meant no cap at all)."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of megabytes, not {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m autograder",
                                     description="Generate, grade and check mlc assignments.")
    sub = parser.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("generate", help="instructor notebook -> student notebook + tests")
    gen.add_argument("names", nargs="+", help="assignment names (folders of instructor/)")
    gen.set_defaults(func=_cmd_generate)

    grade = sub.add_parser("grade", help="grade submissions (sandboxed)")
    grade.add_argument("--assignment", required=True)
    grade.add_argument("--out", required=True, help="output folder (grades.csv, per student)")
    grade.add_argument("--tests", help="folder holding <assignment>/tests.json and grader.py "
                       "(default: autograder/tests); keep real hidden tests outside the repo")
    grade.add_argument("--timeout", type=float, default=120.0, help="seconds per cell")
    grade.add_argument("--jobs", type=int, default=1, help="submissions graded in parallel")
    where = grade.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDRESS",
                       help="grade on the Dask cluster at ADDRESS (tcp://HOST:8786); needs "
                       'pip install -e ".[distributed]"')
    where.add_argument("--cluster", metavar="local:N",
                       help="grade on a Dask LocalCluster of N worker processes")
    grade.add_argument("--connect-timeout", type=float, default=5.0,
                       help="seconds to reach the scheduler before giving up")
    grade.add_argument("--memory-mb", type=int, default=4096, help="address-space limit")
    grade.add_argument("--size", type=int, default=None,
                       help="problem size for schedule cases (e.g. 256 for a quick run)")
    grade.add_argument("--quiet", action="store_true")
    grade.add_argument("--reference", metavar="NOTEBOOK",
                       help="the reference solution graded before the class (default: "
                       "reference.ipynb in the tests folder, else instructor/NAME/NAME.ipynb)")
    grade.add_argument("--skip-reference-check", action="store_true",
                       help="do not grade the reference solution first (the gradebook says so)")
    grade.add_argument("--max-size-mb", type=_megabytes, default=20.0,
                       help="a larger submission is not parsed: status 'too large' (default 20)")
    grade.add_argument("--insecure", action="store_true",
                       help="grade even without namespaces (resource limits only; the "
                       "students' code can read and change your files)")
    grade.add_argument("submissions", nargs="+")
    grade.set_defaults(func=_cmd_grade)

    check = sub.add_parser("check", help="run a notebook's public tests")
    check.add_argument("notebook")
    check.add_argument("--timeout", type=float, default=300.0, help="seconds per cell")
    check.set_defaults(func=_cmd_check)

    doctor = sub.add_parser("doctor", help="can this machine grade? which protections hold?")
    doctor.add_argument("--insecure", action="store_true",
                        help="report as `grade --insecure` would decide")
    doctor.add_argument("--assignment", action="append",
                        help="grade this assignment's reference solution (repeatable; "
                        "default: every assignment in the tests folder)")
    doctor.add_argument("--tests", help="the tests folder (default: autograder/tests)")
    doctor.add_argument("--timeout", type=float, default=120.0, help="seconds per cell")
    doctor.add_argument("--memory-mb", type=int, default=4096, help="address-space limit")
    doctor.add_argument("--size", type=int, default=None, help="problem size (as grade)")
    doctor.add_argument("--skip-reference-check", action="store_true",
                        help="check the sandbox only, grade no reference solution")
    doctor.add_argument("--jobs", type=int, default=1, help=argparse.SUPPRESS)
    doctor_where = doctor.add_mutually_exclusive_group()
    doctor_where.add_argument("--scheduler", metavar="ADDRESS",
                              help="grade the references on the Dask cluster at ADDRESS")
    doctor_where.add_argument("--cluster", metavar="local:N",
                              help="grade the references on a Dask LocalCluster of N workers")
    doctor.add_argument("--connect-timeout", type=float, default=5.0,
                        help="seconds to reach the scheduler before giving up")
    doctor.set_defaults(func=_cmd_doctor)
    return parser


def main(argv: list[str] | None = None, executor: Any = None) -> int:
    """Run a command. ``executor`` (a :class:`mlc.tune.executor.DaskExecutor` around a Client
    you made, e.g. from dask-gateway) is where ``grade`` runs its jobs; it stays open."""
    args = build_parser().parse_args(argv)
    args.executor = executor
    return int(args.func(args))
