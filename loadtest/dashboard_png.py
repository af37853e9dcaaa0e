"""Render the Grafana dashboard's panels to a PNG from real data, without Grafana: `gangplank
serve` on the demo cluster, the demo's calls repeated for a while, Debian's Prometheus scraping
it, then every panel's queries asked over that time and drawn with matplotlib.

  python -m loadtest.dashboard_png [--seconds 90] [--png docs/dashboard.png]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from extender import dashboard
from extender.demo import CALLS, DATA


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def _wait(url: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=1):
                return
        except OSError:
            time.sleep(0.3)
    raise SystemExit(f"{url} did not answer")


def collect(seconds: float, app_port: int = 18897, prom_port: int = 19097) -> tuple[Any, float]:
    prometheus = shutil.which("prometheus")
    if prometheus is None:
        raise SystemExit("prometheus is not installed (apt-get install prometheus)")
    base = f"http://127.0.0.1:{app_port}"
    tmp = Path(tempfile.mkdtemp())
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "extender",
            "serve",
            "--cluster-file",
            str(DATA / "demo-cluster.yaml"),
            "--policy",
            str(DATA / "demo-policy.yaml"),
            "--bind",
            f"127.0.0.1:{app_port}",
            "--log-level",
            "warning",
        ]
    )
    config = {
        "global": {"scrape_interval": "2s"},
        "scrape_configs": [
            {"job_name": "gangplank", "static_configs": [{"targets": [f"127.0.0.1:{app_port}"]}]}
        ],
    }
    (tmp / "prometheus.yml").write_text(yaml.safe_dump(config))
    prom = subprocess.Popen(
        [
            prometheus,
            f"--config.file={tmp / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp / 'data'}",
            f"--web.listen-address=127.0.0.1:{prom_port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait(f"{base}/readyz")
        _wait(f"http://127.0.0.1:{prom_port}/-/ready")
        started = time.time()
        while time.time() - started < seconds:
            for verb, name, _ in CALLS:
                body = (DATA / "demo-requests" / name).read_bytes()
                request = urllib.request.Request(
                    f"{base}/scheduler/{verb}", body, {"Content-Type": "application/json"}
                )
                urllib.request.urlopen(request, timeout=10).read()
            time.sleep(0.2)
        time.sleep(3)
        end = time.time()
        url = f"http://127.0.0.1:{prom_port}"
        panels = []
        for panel in dashboard.model()["panels"]:
            if panel["type"] == "row":
                continue
            lines = []
            for target in panel.get("targets", []):
                expr = target["expr"].replace("$__rate_interval", "20s")
                query = urllib.parse.urlencode(
                    {"query": expr, "start": started, "end": end, "step": 2}
                )
                data = _get(f"{url}/api/v1/query_range?{query}")["data"]["result"]
                for series in data:
                    legend = target.get("legendFormat", "") or expr[:30]
                    for key, value in series["metric"].items():
                        legend = legend.replace("{{" + key + "}}", value)
                    points = [(float(t) - started, float(v)) for t, v in series["values"]]
                    lines.append((legend, points))
            panels.append((panel["title"], panel["type"], lines))
        return panels, end - started
    finally:
        prom.terminate()
        server.terminate()
        prom.wait(20)
        server.wait(20)


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
