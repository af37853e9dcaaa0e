"""report.html (the summary's text, the charts when matplotlib is there) and report.json."""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from extender.sim.report.cells import by_variant
from extender.sim.report.charts import colours, plots
from extender.sim.report.figures import Run
from extender.sim.report.tables import describe, summary
from extender.sim.report.verdicts import nothing_started, nothing_started_line

CHARTS_MISSING = "matplotlib is not installed (pip install 'gangplank[sim]' for them)"


def write_html(runs: Sequence[Run], path: Path, title: str, notes: Sequence[str]) -> bool:
    """The page: the variants, what changes, the charts, every figure. Without matplotlib (a
    plain install, no `sim` extra) the page has no charts and says so; returns whether it has
    them."""
    groups = by_variant(runs)
    colour = colours(groups)
    text = summary(runs)
    swatches = "".join(
        f"<li><span style='display:inline-block;width:1em;height:1em;background:"
        f"{colour[g[0]['label']]};margin-right:.5em;vertical-align:middle'></span>"
        f"{html.escape(describe(g))}</li>"
        for g in groups
    )
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title>",
        "<style>body{font-family:sans-serif;max-width:1150px;margin:1.5em auto;color:#222;"
        "font-size:15px;padding:0 1em}pre{background:#f6f6f6;padding:1em;font-size:13px;"
        "white-space:pre-wrap;overflow-wrap:anywhere}@media(max-width:1000px){pre{font-size:11px}}"
        "img{max-width:100%}ul{padding-left:1.2em}"
        ".warning{background:#fde2e1;border-left:5px solid #c62828;padding:.6em 1em;"
        "font-weight:bold}</style>",
        f"</head><body><h1>{html.escape(title)}</h1>",
        f"<p>{html.escape(text.split(chr(10), 1)[0])}</p><ul>{swatches}</ul>",
        *(
            f"<p class='warning'>{html.escape(nothing_started_line(g))}</p>"
            for g in groups
            if nothing_started(g)
        ),
    ]
    if notes:
        parts.append(
            "<h2>What changes</h2>" + "".join(f"<pre>{html.escape(n)}</pre>" for n in notes)
        )
    try:
        charts = plots(runs)
    except ModuleNotFoundError as err:
        if err.name != "matplotlib":
            raise
        charts = None
        parts.append(f"<p class='note'>No charts: {html.escape(CHARTS_MISSING)}.</p>")
    for heading, png in charts or ():
        parts.append(
            f"<h2>{html.escape(heading)}</h2><img alt='{html.escape(heading)}' "
            f"src='data:image/png;base64,{png}'>"
        )
    parts.append("<h2>Every figure</h2><pre>" + html.escape(text) + "</pre>")
    parts.append("</body></html>")
    path.write_text("\n".join(parts))
    return charts is not None


def write_json(
    runs: Sequence[Run], path: Path, differences: Sequence[Mapping[str, Any]] = ()
) -> None:
    path.write_text(json.dumps({"runs": list(runs), "differences": list(differences)}, indent=1))
