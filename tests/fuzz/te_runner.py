"""The parent side of the te-program fuzzer: a worker process fed over a pipe, restarted
when it dies (a crash is a verdict, not the end of the run)."""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
from typing import Any

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "te_worker.py")


class Worker:
    def __init__(self) -> None:
        self.proc: subprocess.Popen[str] | None = None
        self.counts: collections.Counter[str] = collections.Counter()
        self.failures: list[tuple[dict[str, Any], dict[str, Any]]] = []

    def _start(self) -> subprocess.Popen[str]:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen(
                [sys.executable, WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL, text=True, bufsize=1,
            )  # fmt: skip
        return self.proc

    def run(self, spec: dict[str, Any]) -> dict[str, Any]:
        proc = self._start()
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(json.dumps(spec) + "\n")
            proc.stdin.flush()
            line = proc.stdout.readline()
        except BrokenPipeError:
            line = ""
        if not line:
            code = proc.wait()
            verdict = {"status": "crash", "detail": f"worker died (exit code {code})"}
        else:
            verdict = json.loads(line)
        self.counts[verdict["status"]] += 1
        if verdict["status"] not in ("ok", "refused", "checked"):
            self.failures.append((spec, verdict))
        return verdict

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
