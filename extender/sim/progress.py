"""How far `gangplank simulate` is, on stderr: a progress bar (tqdm, of the `sim` extra), or
without it a plain line as each run starts and ends, the first saying which extra draws a bar.

A plain `pip install gangplank` has no tqdm: the simulation runs all the same.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

EXTRA_HINT = "pip install 'gangplank[sim]' for a progress bar"
_hinted = False  # the hint is said once per process


def _tqdm() -> Any:
    """tqdm's bar class, or None when the `sim` extra is not installed."""
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm


def _plain(text: str) -> None:
    global _hinted
    hint = "" if _hinted else f" ({EXTRA_HINT})"
    _hinted = True
    print(f"{text}{hint}", file=sys.stderr, flush=True)


def run_progress(
    total: float, label: str, quiet: bool
) -> tuple[Callable[[float], None], Callable[[], None]]:
    """(update with the simulated seconds reached, close) for one run of `total` simulated
    seconds of arrivals."""
    if quiet:
        return (lambda t: None), (lambda: None)
    tqdm = _tqdm()
    if tqdm is None:
        _plain(f"{label}: simulating {total / 3600:.1f} h of arrivals")
        return (lambda t: None), (lambda: print(f"{label}: done", file=sys.stderr, flush=True))
    bar = tqdm(
        total=round(total / 3600, 2),
        desc=label,
        unit="h",
        file=sys.stderr,
        leave=False,
        bar_format="{desc}: {percentage:3.0f}%|{bar}| {n:.1f}/{total:.1f} simulated h "
        "[{elapsed}<{remaining}]",
    )

    def update(t: float) -> None:
        hours = round(t / 3600, 2)
        if hours > bar.total:  # past the last arrival: the run goes on until the work is done
            bar.total = hours
            bar.set_description_str(f"{label}, after the last arrival", refresh=False)
        if hours > bar.n:
            bar.update(hours - bar.n)

    return update, bar.close


def runs_progress(
    total: int, workers: int, quiet: bool
) -> tuple[Callable[[], None], Callable[[], None]]:
    """(one run done, close) for `total` runs in `workers` processes."""
    if quiet:
        return (lambda: None), (lambda: None)
    tqdm = _tqdm()
    if tqdm is None:
        done = [0]

        def tell() -> None:
            done[0] += 1
            print(f"runs: {done[0]} of {total} done", file=sys.stderr, flush=True)

        _plain(f"runs: {total}, {workers} at once")
        return tell, (lambda: None)
    bar = tqdm(total=total, desc=f"runs ({workers} at once)", unit="run", file=sys.stderr)
    return (lambda: bar.update(1)), bar.close
