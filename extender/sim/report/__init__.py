"""What a simulation shows: figures (JSON), a terminal summary, side-by-side comparisons over
seeds and an HTML page of charts (matplotlib, imported only when a page is drawn).

A run is one variant (a label: a cluster, a policy, gangplank or kube-scheduler alone) on the
workload of one seed. Functions here take a flat list of runs and group them by label, in the
order given; with several seeds a figure shows as the median and the range over seeds, and a
difference between two variants is counted seed by seed (the same workload on both).

- `figures.py`: what one run measured (report.json's figures);
- `cells.py`, `rows.py`: how a figure is written, which figures are shown and named how;
- `tables.py`: the terminal summary; `verdicts.py`: what changes between variants;
- `charts.py`: the page's charts; `page.py`: report.html and report.json.

What the demo's live view uses is named here too.
"""

from extender.sim.report.figures import figures
from extender.sim.report.page import write_html, write_json
from extender.sim.report.tables import summary

__all__ = ["figures", "summary", "write_html", "write_json"]
