"""report.html as a browser shows it: what a screenshot showed wrong, pinned by its causes (a
panel with nothing to draw, bars against the frame, text blocks cut on the right, titles of
stacked parentheses)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from extender.sim.baseline import Baseline
from extender.sim.cluster import synthetic
from extender.sim.driver import Driver, Options
from extender.sim.inprocess import InProcess
from extender.sim.report.charts import charts, title
from extender.sim.report.figures import figures
from extender.sim.report.page import write_html
from extender.sim.workload import JobSpec

# Each draws a report page with matplotlib (about 13 s in all): slow.
pytestmark = pytest.mark.slow


def gang(name: str, at: float) -> JobSpec:
    return JobSpec(name, "", 2, 8, 1000, 1024, 3600.0, at, namespace="default")


def runs(*variants: str, seeds: int = 2) -> list[dict[str, Any]]:
    """Three gangs of 2 x 8 GPUs on 16 GPUs, over `seeds` seeds, by gangplank (nothing
    preempted, no gang held incomplete) and, if asked, by kube-scheduler alone."""
    out = []
    for seed in range(1, seeds + 1):
        for label in variants:
            extender = Baseline() if label == "kube-scheduler alone" else InProcess(None)
            jobs = [gang("a", 0), gang("b", 0), gang("c", 1)]
            driver = Driver(synthetic(2, 8), jobs, extender, Options(seed=seed))
            driver.run()
            out.append(figures(driver, label, cluster="synthetic:2x8", seed=seed))
    return out


@pytest.fixture(autouse=True)
def _closed() -> Iterator[None]:
    """Each test's figures closed after it (pyplot keeps them)."""
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


def panels(found: list[tuple[str, Any]]) -> Iterator[tuple[str, Any]]:
    """(chart title, axes) of every visible panel."""
    for heading, figure in found:
        for ax in figure.axes:
            if ax.get_visible():
                yield heading, ax


def test_a_panel_with_nothing_to_draw_says_none_instead_of_an_empty_axis() -> None:
    found = charts(runs("gangplank"))
    by_title = {ax.get_title(loc="left"): ax for _, ax in panels(found)}
    for empty in ("jobs preempted", "GPUs held by gangs not all bound", "stranded GPUs"):
        ax = next(a for t, a in by_title.items() if t.startswith(empty))
        assert [t.get_text() for t in ax.texts] == ["none"], empty
        assert list(ax.get_yticks()) == [], f"{empty}: no scale of nothing"
    for heading, ax in panels(found):
        low = (ax.get_xlim() if horizontal(ax) else ax.get_ylim())[0]
        assert low >= 0, f"{heading}: an axis of values below 0 ({low})"


def horizontal(ax: Any) -> bool:
    """Whether the panel's values run along x (the waits by cause, one bar a queue)."""
    return bool(ax.get_xlabel() == "job-hours waited")


def reach(ax: Any) -> tuple[float, float]:
    """(how far the panel's bars and lines reach, where its frame is) along the values' axis."""
    if horizontal(ax):
        return max(p.get_x() + p.get_width() for p in ax.patches), ax.get_xlim()[1]
    tops = [p.get_y() + p.get_height() for p in ax.patches]
    tops += [max(line.get_ydata()) for line in ax.lines]
    for collection in ax.collections:  # the ranges (lines), the fair shares (markers)
        if hasattr(collection, "get_segments"):
            tops += [y for segment in collection.get_segments() for _, y in segment]
        else:
            tops += [y for _, y in collection.get_offsets() if y == y]  # not NaN
    return max(tops), ax.get_ylim()[1]


def test_bars_and_lines_keep_a_margin_under_the_frame() -> None:
    for heading, ax in panels(charts(runs("gangplank", "kube-scheduler alone"))):
        if not ax.texts:  # "none" has nothing to keep under it
            drawn, frame = reach(ax)
            assert drawn * 1.05 < frame, f"{heading}, {ax.get_title(loc='left')}: {drawn}, {frame}"


def test_text_blocks_wrap_instead_of_being_cut_on_the_right(tmp_path: Path) -> None:
    write_html(runs("gangplank", seeds=1), tmp_path / "report.html", "t", ["x " * 200])
    page = (tmp_path / "report.html").read_text()
    style = re.search(r"pre\{([^}]*)\}", page)
    assert style is not None and "white-space:pre-wrap" in style[1]
    assert "overflow-wrap:anywhere" in style[1] and "overflow:auto" not in style[1]


def parentheses(text: str) -> tuple[int, int]:
    """(how deep parentheses nest, how many groups there are at the top)."""
    depth = deepest = groups = 0
    for char in text:
        if char == "(":
            depth += 1
            groups += depth == 1
            deepest = max(deepest, depth)
        elif char == ")":
            depth -= 1
    return deepest, groups


@pytest.mark.parametrize(
    "seeds", [1, 2], ids=["of one seed", "over seeds, whose titles say how bars and lines read"]
)
def test_every_title_has_one_pair_of_parentheses_at_most(tmp_path: Path, seeds: int) -> None:
    found = runs("gangplank", "kube-scheduler alone", seeds=seeds)
    write_html(found, tmp_path / "report.html", "t", [])
    headings = re.findall(r"<h2>(.*?)</h2>", (tmp_path / "report.html").read_text())
    titles = [*headings, *(ax.get_title(loc="left") for _, ax in panels(charts(found)))]
    assert len(headings) >= 7
    assert [t for t in titles if parentheses(t) not in ((0, 0), (1, 1))] == []
    assert title("Queue waits", "p50 hatched", "", "bars: the median") == (
        "Queue waits (p50 hatched; bars: the median)"
    )
