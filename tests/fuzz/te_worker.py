"""Worker process of the te-program fuzzer: reads one program (JSON) per line on stdin,
writes one verdict (JSON) per line on stdout. A crash of the compiled code kills only this
process; the parent counts it and starts another."""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from te_programs import check  # noqa: E402


def main() -> None:
    out = sys.stdout
    sys.stdout = sys.stderr  # stray prints must not corrupt the protocol
    for line in sys.stdin:
        verdict = check(json.loads(line))
        out.write(json.dumps(verdict) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
