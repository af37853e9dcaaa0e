"""Render the Grafana dashboard's panels to a PNG from real data, without Grafana: `gangplank
serve` on the demo cluster, the demo's calls repeated for a while, Debian's Prometheus scraping
it, then every panel's queries asked over that time and drawn with matplotlib.

  python -m loadtest.dashboard_png [--seconds 90] [--png docs/dashboard.png]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path
from typing import Any

from extender.observe import dashboard
from loadtest import live


def collect(seconds: float) -> tuple[Any, float]:
    """Drive the demo for `seconds` under a scraping Prometheus; every panel's series."""
    with live.demo_server() as base, tempfile.TemporaryDirectory() as tmp:
        target = base.removeprefix("http://")
        with live.prometheus(target, Path(tmp), interval="2s") as url:
            started = time.time()
            while time.time() - started < seconds:
                live.drive(base)
                time.sleep(0.2)
            time.sleep(3)
            end = time.time()
            return [panel_series(url, p, started, end) for p in panels()], end - started


def panels() -> list[dict[str, Any]]:
    return [p for p in dashboard.model()["panels"] if p["type"] != "row"]


def panel_series(url: str, panel: dict[str, Any], start: float, end: float) -> Any:
    lines = []
    for target in panel.get("targets", []):
        expr = target["expr"].replace("$__rate_interval", "20s")
        query = urllib.parse.urlencode({"query": expr, "start": start, "end": end, "step": 2})
        for series in live.get(f"{url}/api/v1/query_range?{query}")["data"]["result"]:
            legend = target.get("legendFormat", "") or expr[:30]
            for key, value in series["metric"].items():
                legend = legend.replace("{{" + key + "}}", value)
            lines.append((legend, [(float(t) - start, float(v)) for t, v in series["values"]]))
    return panel["title"], panel["type"], lines


def plot(panels: Any, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = 4
    rows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 2.6 * rows))
    flat = axes.ravel()
    for ax, (title, kind, lines) in zip(flat, panels, strict=False):
        ax.set_title(title, fontsize=8)
        ax.tick_params(labelsize=6)
        if kind == "stat":
            last = [points[-1][1] for _, points in lines if points]
            text = f"{last[0]:.3g}" if last else "no data"
            ax.text(0.5, 0.45, text, ha="center", va="center", fontsize=22)
            ax.set_xticks([])
            ax.set_yticks([])
            continue
        for legend, points in lines[:8]:
            ax.plot([p[0] for p in points], [p[1] for p in points], label=legend, linewidth=1)
        if lines:
            ax.legend(fontsize=5, loc="upper left")
        else:
            ax.text(
                0.5,
                0.5,
                "no data (no such event in the demo)",
                ha="center",
                fontsize=7,
                transform=ax.transAxes,
            )
    for ax in flat[len(panels) :]:
        ax.axis("off")
    fig.suptitle("gangplank dashboard panels over the demo cluster (seconds since start)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=90)
    parser.add_argument("--png", type=Path, default=Path("docs/dashboard.png"))
    args = parser.parse_args(argv)
    panels, span = collect(args.seconds)
    plot(panels, args.png)
    print(f"{len(panels)} panels over {span:.0f} s: {args.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
