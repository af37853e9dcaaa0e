"""`gangplank simulate` as a user runs it: the console script of this venv, this checkout's code,
in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[2]


def gangplank(
    *args: str, cwd: Path, path: tuple[Path, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """The console script run in `cwd`; `path`: directories put before this checkout on
    PYTHONPATH (e.g. one whose packages stand in for libraries a plain install lacks)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in (*path, ROOT))}
    return subprocess.run(
        [str(BIN / "gangplank"), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
        check=False,
    )
