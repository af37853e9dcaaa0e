"""Figures written into a markdown page: a section between two markers is replaced, the rest of
the page is kept; and the machine the figures were measured on."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def write_section(path: Path, begin: str, end: str, body: str) -> None:
    """Put `body` between the markers `begin` and `end` of `path` (the markers are added at the
    end when the page has none, the page is made when there is none)."""
    text = path.read_text() if path.exists() else f"# Benchmarks\n\n{begin}\n{end}\n"
    if begin not in text:
        text += f"\n{begin}\n{end}\n"
    head, rest = text.split(begin, 1)
    tail = rest.split(end, 1)[1]
    path.write_text(f"{head}{begin}\n{body}\n{end}{tail}")


def machine() -> str:
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        "unknown CPU",
    )
    memory = Path("/proc/meminfo").read_text().split()[1]
    return (
        f"{os.cpu_count()} cores ({model}), {int(memory) // 1024 // 1024} GiB, "
        f"Python {sys.version.split()[0]}"
    )
