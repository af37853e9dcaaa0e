"""What changes from one variant to another, seed by seed, and whether it goes one way or is
within noise; no verdict from a variant in which nothing started."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from extender.core.model.text import shorten
from extender.sim.report.cells import REASON_WIDTH, fmt, pct, spread, table
from extender.sim.report.figures import Run
from extender.sim.report.rows import QUEUE_ROWS, summary_rows


def nothing_started(group: Sequence[Run]) -> bool:
    """Whether not one job of the variant started, in any seed: its figures say nothing (a
    policy whose queues the workload does not use, every queue closed)."""
    return all(r["jobs"] and not r["started"] for r in group)


def nothing_started_line(group: Sequence[Run]) -> str:
    """What to say, loudly, of a variant in which nothing started."""
    run = group[0]
    seeds = " in any seed" if len(group) > 1 else ""
    reasons = run.get("never_started_reasons") or []
    why = f" (the commonest reason: {shorten(reasons[0][0], REASON_WIDTH)})" if reasons else ""
    return (
        f"NOTHING STARTED in {run['label']}: not one of its {run['jobs']:,} jobs started{seeds}"
        f"{why}: its figures say nothing, and no verdict is drawn from it"
    )


def verdicts(first: Sequence[Run], other: Sequence[Run]) -> tuple[list[dict[str, Any]], str]:
    """The differences from variant `first` to `other` (`differences`), or none and the line
    saying why when nothing started in either."""
    empty = [g[0]["label"] for g in (first, other) if nothing_started(g)]
    if empty:
        line = (
            f"{other[0]['label']} against {first[0]['label']}: no verdict: nothing started in "
            + " and ".join(empty)
        )
        return [], line
    return differences(first, other), ""


def _values(group: Sequence[Run], key: str, queue: str | None) -> dict[Any, float | None]:
    out: dict[Any, float | None] = {}
    for run in group:
        scope = run if queue is None else run["queues"].get(queue)
        out[run.get("seed")] = None if scope is None else scope.get(key)
    return out


def differences(a: Sequence[Run], b: Sequence[Run]) -> list[dict[str, Any]]:
    """What changes from variant `a` to variant `b` (each one run per seed), seed by seed: each
    figure that differs, with its medians, the change per seed, and whether the change goes the
    same way in every seed or is within noise (up in some seeds, down in others). Those that go
    one way come first."""
    queues = [q for q in a[0]["queues"] if q in b[0]["queues"]]
    asked = [(q, key, f"{q} {text}") for q in queues for key, text in QUEUE_ROWS]
    asked += [(None, key, text) for key, text in summary_rows([*a, *b])[2:]]
    out = []
    for queue, key, what in asked:
        va, vb = _values(a, key, queue), _values(b, key, queue)
        seeds = [s for s in va if s in vb and va[s] is not None and vb[s] is not None]
        pairs = [(float(va[s] or 0), float(vb[s] or 0)) for s in seeds]
        if not pairs or all(x == y for x, y in pairs):
            continue
        change = [y - x for x, y in pairs]
        up, down = sum(c > 0 for c in change), sum(c < 0 for c in change)
        if len(pairs) == 1:
            verdict = "one seed: noise unknown"
        elif up == len(pairs) or down == len(pairs):
            verdict = f"{'up' if up else 'down'} in every seed"
        else:
            same = len(pairs) - up - down
            verdict = (
                "within noise ("
                + ", ".join(
                    f"{word} in {n}"
                    for word, n in (("up", up), ("down", down), ("unchanged", same))
                    if n
                )
                + f" of {len(pairs)} seeds)"
            )
        out.append(
            {
                "variant": b[0]["label"],
                "against": a[0]["label"],
                "queue": queue,
                "figure": key,
                "what": what,
                "seeds": seeds,
                "a": [x for x, _ in pairs],
                "b": [y for _, y in pairs],
                "change": change,
                "verdict": verdict,
            }
        )
    out.sort(key=lambda d: d["verdict"].startswith("within noise"))
    return out


def difference_table(found: Sequence[Mapping[str, Any]]) -> str:
    """The differences of each variant against the one it is compared with, a table each: the
    figure, its median in both, the change per seed (median, lowest to highest), the verdict."""
    out = []
    pairs = list(dict.fromkeys((d["variant"], d["against"]) for d in found))
    for variant, against in pairs:
        rows = [d for d in found if (d["variant"], d["against"]) == (variant, against)]
        seeds = len(rows[0]["a"])
        lines = [
            [
                "",
                against,
                variant,
                "change" if seeds == 1 else f"change per seed ({seeds} seeds)",
                "",
            ]
        ]
        for d in rows:
            change = spread(d["change"])
            assert change is not None
            share = d["figure"] == "share"  # shown in percent, changes in percentage points
            form, signed = (pct, _points) if share else (fmt, _signed)
            median, low, high = change
            moved = (
                signed(median)
                if seeds == 1
                else f"{signed(median)} ({signed(low)} to {signed(high)})"
            )
            lines.append(
                [
                    d["what"],
                    form(statistics.median(d["a"])),
                    form(statistics.median(d["b"])),
                    moved,
                    d["verdict"],
                ]
            )
        head = f"{variant} against {against}" + (
            f" (medians of {seeds} seeds)"
            if seeds > 1
            else " (one seed: --seeds 3 or more to tell a difference from noise)"
        )
        out.append(head + ":\n" + table(lines, left=(0, 4)))
    return "\n\n".join(out)


def _points(value: float) -> str:
    return f"{value * 100:+.1f} pp" if value else "0"


def _signed(value: float) -> str:
    return ("+" if value > 0 else "") + fmt(round(value, 4))
