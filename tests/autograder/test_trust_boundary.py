"""One trust boundary around everything a student exported (issue 25).

The attack that worked: a1's program export ``tmp = T.alloc_buffer((T.call_extern("int32",
"getpid") * 0 + 2,), "float32")`` passed the program check (its visitor never walked buffer
shapes), the LLVM code generator emitted the call, and the process that ran it was root with
every capability, beside the hidden tests and the reference solutions. Now three walls stand
in the way, each tested here on its own:

1. the check sees every call (visitors walk buffer shapes, strides, match_buffer);
2. the compiled module may call only math functions (``allow_calls=False``), whatever the
   check missed;
3. the program is parsed, built and run in a judged process: its own unprivileged uid, no
   capability, no_new_privs and seccomp, a file system without the tests, the reference
   solutions or the grader's folder, writable only in its own output folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from autograder.cases import TECase
from autograder.harness import te_program
from autograder.program import check_program, judge_program
from autograder.sandbox import is_root, remove_tree
from mlc import te

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
GRADER = REPO / "instructor" / "a1_tensor_expressions" / "grader.py"
SOLUTION = REPO / "instructor" / "a1_tensor_expressions" / "solution.ipynb"
INNER = "AUTOGRADER_TRUST_AS_USER"
NOBODY = 65534


def add_one(x):
    return te.compute(x.shape, lambda i, j: x[i, j] + 1.0, name="y")


CASE = TECase("add_one", inputs={"x": ((2, 9), "float32")}, reference=lambda x: x + 1)
HEAD = '''@T.prim_func
def main(A: T.Buffer((2, 9), "float32"), B: T.Buffer((2, 9), "float32")):
'''
BODY = '''    for i, j in T.grid(2, 9):
        B[i, j] = A[i, j] + T.float32(1)
'''
CALL = 'T.call_extern("int32", "{name}") * 0'


def forged(where: str, name: str = "getpid") -> str:
    """A correct program with a call out hidden in a buffer definition."""
    call = CALL.format(name=name)
    if where == "shape":
        return HEAD + f'    tmp = T.alloc_buffer(({call} + 2,), "float32")\n' + BODY
    if where == "decl_buffer":
        return HEAD + f'    tmp = T.decl_buffer(({call} + 2,), "float32")\n' + BODY
    if where == "strides":
        return HEAD + (f'    tmp = T.alloc_buffer((2, 9), "float32", strides=({call} + 9, 1))\n'
                       '    tmp[0, 0] = A[0, 0]\n') + BODY
    if where == "match_buffer":
        return ('@T.prim_func\ndef main(a: T.handle, B: T.Buffer((2, 9), "float32")):\n'
                f'    A = T.match_buffer(a, (2, 9), "float32", strides=({call} + 9, 1))\n'
                + BODY)
    if where == "block":
        return HEAD + ('    with T.block("root"):\n'
                       f'        tmp = T.alloc_buffer(({call} + 2,), "float32")\n'
                       '        for i, j in T.grid(2, 9):\n'
                       '            with T.block("B"):\n'
                       '                vi, vj = T.axis.remap("SS", [i, j])\n'
                       '                B[vi, vj] = A[vi, vj] + T.float32(1)\n')
    raise ValueError(where)


WHERE = ["shape", "decl_buffer", "strides", "match_buffer", "block"]


def test_the_honest_program_is_correct():
    assert check_program(CASE, HEAD + BODY, seed=1) == (True, "correct on fresh inputs")


@pytest.mark.parametrize("where", WHERE)
def test_a_call_hidden_in_a_buffer_definition_is_refused(where):
    """Wall 1: before, each of these scored full marks and ran the call."""
    ok, message = check_program(CASE, forged(where, "system"), seed=1)
    assert not ok and "calls code outside it (call_extern)" in message, message


@pytest.mark.parametrize("where", ["shape", "match_buffer"])
def test_a_call_the_check_missed_is_refused_by_the_compiled_code_check(where, monkeypatch):
    """Wall 2 alone: with the program check blinded, the build refuses the symbol."""
    import mlc.tir

    monkeypatch.setattr(mlc.tir, "post_order_visit", lambda node, fn: None)
    ok, message = check_program(CASE, forged(where), seed=1)
    assert not ok and "ForbiddenCallError" in message and "'getpid'" in message, message


def _probe_paths(work: Path) -> dict[str, list[str]]:
    """Files the judged step must not read (the hidden tests, the reference solution, the
    grader's own folder) and places it must not write."""
    secret = work / "expected.txt"  # as the grader's folder of the job would hold
    secret.write_text("the reference's answer")
    import pwd

    home = Path(pwd.getpwuid(os.getuid()).pw_dir)  # the instructor's private copies live here
    private = home / ".trust-boundary-probe"
    if home != Path("/") and os.access(home, os.W_OK):
        private.write_text("a private reference solution")
    return {"read": [str(GRADER), str(SOLUTION),
                     str(REPO / "autograder" / "tests" / "a1_tensor_expressions" / "grader.py"),
                     str(secret), str(private)],
            "write": [str(REPO / "pwned-by-export"), str(work / "pwned"), "/etc/pwned",
                      str(Path.home() / "pwned")]}


def _judge(text: str, probe: bool = True) -> tuple[bool, str, dict]:
    """judge_program in a fresh folder; the report's ``left`` lists the probe's write
    targets that exist afterwards on the grader's side (a write that got out)."""
    work = Path(tempfile.mkdtemp(prefix="trust-"))
    paths = _probe_paths(work)
    try:
        ok, message, report = judge_program(CASE, text, work, seed=5,
                                            hide=[str(GRADER.parent)],
                                            probe={**paths, "compiled": True} if probe
                                            else None)
        report["left"] = [p for p in paths["write"] if os.path.lexists(p)]
        return ok, message, report
    finally:
        remove_tree(work)


def test_the_judged_process_has_no_privilege_and_sees_no_secret():
    """Wall 3: the process that parses, builds and runs the export (this report comes
    from inside it, right before the compiled code runs)."""
    ok, message, report = _judge(HEAD + BODY)
    assert (ok, message) == (True, "correct on fresh inputs")
    probe = report["probe"]
    assert int(probe["status"]["Uid"]) != 0
    assert probe["caps"]["CapEff"] == 0 and probe["caps"]["CapPrm"] == 0
    assert probe["caps"]["CapBnd"] == 0 and probe["caps"]["CapAmb"] == 0
    assert probe["status"]["NoNewPrivs"] == "1" and probe["status"]["Seccomp"] == "2"
    assert all(v != "read" for v in probe["read"].values()), probe["read"]
    # the same from compiled code calling libc's open() (as a call past every check would)
    assert all(fd < 0 for fd in probe["compiled_read"].values()), probe["compiled_read"]
    # a write can only land in the judged process's private /tmp (gone with it)
    assert report["left"] == [], (report["left"], probe["write"])
    assert probe["write"][str(REPO / "pwned-by-export")] != "written"


@pytest.mark.parametrize("where", ["shape", "strides"])
def test_a_forged_export_judged_in_its_own_process_is_refused(where):
    ok, message, report = _judge(forged(where, "system"), probe=False)
    assert not ok and "calls code outside it" in message and report["ran"] is False


def test_what_the_judged_side_says_cannot_forge_the_grade():
    """The judged side only runs the program; the verdict is computed outside it, so a
    program that writes the wrong values is wrong whatever the judged side reports."""
    wrong = HEAD + BODY.replace("T.float32(1)", "T.float32(2)")
    ok, message, _ = _judge(wrong, probe=False)
    assert not ok and message.startswith("on fresh inputs:")


@pytest.mark.parametrize("copied", [False, True], ids=["repo", "copied-into-the-job"])
def test_the_grader_path_judges_the_real_a1_export_in_a_separate_process(tmp_path, copied):
    """Through the trusted runner the grader uses (root: nested walls); the checks where
    the instructor keeps them, or copied into the grader's folder of the job (what grade
    does): the judged step hides them either way and still starts."""
    import shutil

    from autograder.cases import load_grader
    from autograder.grade import GradingConfig, _run_trusted

    grader = GRADER
    if copied:
        (tmp_path / "checks").mkdir()
        grader = tmp_path / "checks" / "grader.py"
        shutil.copy(GRADER, grader)
    case = load_grader(grader).case("softmax_a")
    x = np.zeros((7, 33), "float32")

    def softmax(x):
        n, m = x.shape
        k = te.reduce_axis((0, m), name="k")
        mx = te.compute((n,), lambda i: te.max(x[i, k], axis=k), name="mx")
        e = te.compute((n, m), lambda i, j: te.exp(x[i, j] - mx[i]), name="e")
        k2 = te.reduce_axis((0, m), name="k2")
        s = te.compute((n,), lambda i: te.sum(e[i, k2], axis=k2), name="s")
        return te.compute((n, m), lambda i, j: e[i, j] / s[i], name="y")

    text = te_program(softmax, [x], ["x"], {}).script()
    exports = tmp_path / "exports"
    exports.mkdir()
    config = GradingConfig("a1_tensor_expressions")
    run = lambda cmd, cwd: _run_trusted(cmd, cwd, config)  # noqa: E731
    (exports / "softmax_a.json").write_text(json.dumps({"program": text}))
    assert case.check_export(exports, grader_path=grader, workdir=tmp_path,
                             run_trusted=run) == (1.0, "correct on fresh inputs")
    lines = text.splitlines()
    body = next(k for k, line in enumerate(lines) if line.startswith("    ") and "def " not in
                line and "T.func_attr" not in line)
    lines.insert(body, '    tmp = T.alloc_buffer((T.call_extern("int32", "getpid") * 0 + 2,),'
                       ' "float32")')
    (exports / "softmax_a.json").write_text(json.dumps({"program": "\n".join(lines)}))
    fraction, message = case.check_export(exports, grader_path=grader, workdir=tmp_path,
                                          run_trusted=run)
    assert fraction == 0.0 and "calls code outside it" in message, message


@pytest.mark.skipif(not is_root(), reason="dropping to an ordinary user needs root")
@pytest.mark.skipif(bool(os.environ.get(INNER)), reason="this is the ordinary user's run")
def test_again_as_an_ordinary_user():
    """The judged process of an ordinary user's grader: the walls come from a user
    namespace, and the capabilities it holds there are dropped too."""
    home = Path(tempfile.mkdtemp(prefix="trust-as-user-", dir="/run" if os.path.isdir("/run")
                                 else None))
    try:
        os.chown(home, NOBODY, NOBODY)
        os.chmod(home, 0o755)
        env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(home),
               INNER: "1", "PYTHONDONTWRITEBYTECODE": "1", "LANG": "C.UTF-8",
               "PYTHONPATH": str(REPO)}
        cmd = [sys.executable, str(HERE / "as_user.py"), str(NOBODY), "--", sys.executable,
               "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
               f"--basetemp={home}/t", str(Path(__file__)), "-k",
               "judged_process or judged_in_its_own or cannot_forge or grader_path"]
        proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True,
                              timeout=600)
        assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-3000:]
        assert "6 passed" in proc.stdout, proc.stdout[-2000:]
    finally:
        remove_tree(home)


def test_an_export_that_never_ends_fails_its_check_and_is_not_a_grader_error():
    """The judged step's time limit stops the export's own step: a failed check with the
    reason (before, the same program ran in the trusted runner until its limit)."""
    spin = HEAD + '''    for k in range(1099511627776):
        for i, j in T.grid(2, 9):
            B[i, j] = A[i, j] + T.float32(1)
'''
    work = Path(tempfile.mkdtemp(prefix="trust-"))
    try:
        ok, message, _ = judge_program(CASE, spin, work, seed=1, wall_s=3)
    finally:
        remove_tree(work)
    assert not ok and "ran out of time" in message, message


@pytest.mark.parametrize("text, words", [
    (HEAD + "    tmp = T.alloc_buffer((1099511627776,), 'float32')\n"
     "    for i, j in T.grid(2, 9):\n        tmp[i * 9 + j] = A[i, j]\n"
     "    for i, j in T.grid(2, 9):\n        B[i, j] = tmp[i * 9 + j] + T.float32(1)\n",
     "AllocationError"),
    ("@T.prim_func\ndef main(A: T.Buffer((2, 9), 'float32'), B: T.Buffer((2, 9), 'float32')):"
     "\n    B[0, 0] = " + "(" * 5000 + "A[0, 0]" + ")" * 5000 + "\n", "cannot be"),
])
def test_exports_that_exhaust_memory_or_the_parser_are_the_students_failure(text, words):
    ok, message, _ = _judge(text, probe=False)
    assert not ok and words in message, message


def test_a_judged_step_without_every_wall_stops_the_check_loudly(monkeypatch, tmp_path):
    """A sandbox that starts without a wall (here: none but a mount namespace) is never a
    grade: the check raises, naming what is missing, and a runner's GRADER-ERROR line
    becomes SandboxUnavailable (the grader's grader-error row)."""
    from autograder import judged
    from autograder.graphio import GraphCase
    from autograder.judged import JudgeUnavailable
    from autograder.sandbox import SandboxResult, SandboxUnavailable

    monkeypatch.setattr(judged, "run_sandboxed", lambda *a, **k: SandboxResult(
        0, "", False, {"mount_ns": True}))
    with pytest.raises(JudgeUnavailable, match="no capability at all"):
        judge_program(CASE, HEAD + BODY, tmp_path, seed=1)
    case = GraphCase("g", build=lambda: None)
    (tmp_path / "exports").mkdir()
    (tmp_path / "exports" / "g.json").write_text("{}")
    with pytest.raises(SandboxUnavailable, match="lacks"):
        case.check_export(tmp_path / "exports", grader_path=GRADER, workdir=tmp_path,
                          run_trusted=lambda cmd, cwd: (3, "GRADER-ERROR: the sandbox for "
                                                        "checking the export lacks: x"))


def test_a_result_nested_past_the_recursion_limit_is_the_exports_failure(monkeypatch,
                                                                        tmp_path):
    """``result.json`` is what the judged step wrote: nested 100000 deep, ``json.loads``
    raised RecursionError out of run_judged and the trusted runner crashed (a grader-error
    row the export forced). It is a step that stopped without a usable result."""
    from autograder import judged
    from autograder.sandbox import SandboxResult, job_owner, required_protections

    def fake(cmd, folder, env, limits, uid, **k):
        path = folder / "out" / "result.json"
        path.write_text("[" * 100_000 + "]" * 100_000)
        os.chown(path, job_owner(uid), -1)  # as the step's own user wrote it
        return SandboxResult(0, "", False, {n: True for n in required_protections(False)})

    monkeypatch.setattr(judged, "run_sandboxed", fake)
    got = judged.run_judged("autograder.program", tmp_path, {})
    assert got.problem == "" and got.result is None
    assert "stopped without a result" in got.failure
