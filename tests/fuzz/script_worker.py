"""Worker process of the script fuzzer (as te_worker.py): one program (JSON) per line in,
one verdict per line out; a crash kills only this process."""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from script_programs import check  # noqa: E402


def main() -> None:
    out = sys.stdout
    sys.stdout = sys.stderr  # stray prints must not corrupt the protocol
    for line in sys.stdin:
        verdict = check(json.loads(line))
        out.write(json.dumps(verdict) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
