"""`gangplank status|why|queues` and the kubectl plugin `kubectl gangplank …`: read the running
extender's read-only JSON API and print what people ask — tables by default, `-o json|yaml` for
scripts.

gangplank listens on loopback inside its pod, so reach it with a port-forward (which connects
inside the pod): `kubectl -n gangplank port-forward deploy/gangplank 18888` and the default URL
works; or pass `--url` (or set GANGPLANK_URL).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from typing import Any

import yaml

DEFAULT_URL = "http://127.0.0.1:18888"


class ApiError(Exception):
    pass


def fetch(base: str, path: str) -> Any:
    url = f"{base.rstrip('/')}{path}"
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as err:
        try:
            message = json.loads(err.read()).get("Error", "")
        except ValueError:
            message = ""
        raise ApiError(message or f"{url}: HTTP {err.code}") from err
    except OSError as err:
        raise ApiError(
            f"cannot reach gangplank at {base} ({err}); run `kubectl -n gangplank port-forward "
            "deploy/gangplank 18888` or pass --url"
        ) from err


def table(rows: Sequence[Sequence[object]], head: Sequence[str]) -> str:
    cells = [[str(c) for c in head], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(head))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells
    )


def amounts(values: dict[str, Any], resource: str = "nvidia.com/gpu") -> str:
    value = values.get(resource)
    return "-" if value in (None, "") else str(value)


def render_queues(report: dict[str, Any]) -> str:
    if not report.get("queues"):
        return report.get("reason") or "no queues"
    rows = []
    for q in report["queues"]:
        rows.append(
            [
                q.get("name", ""),
                amounts(q.get("used", {})),
                amounts(q.get("guarantee", {})),
                amounts(q.get("max", {})),
                amounts(q.get("borrowed", {})),
                (q.get("pending") or {}).get("jobs", 0),
                f"{q.get('share', 0):.2f}",
            ]
        )
    rows.sort(key=lambda r: float(str(r[-1])))
    head = ["QUEUE", "GPUS USED", "GUARANTEE", "MAX", "BORROWED", "WAITING", "SHARE"]
    return table(rows, head) + "\n(in fair order: the lowest share over weight goes next)"


def render_status(status: dict[str, Any]) -> str:
    gangs = ", ".join(f"{k} {v}" for k, v in sorted(status.get("gangs", {}).items()))
    lines = [f"gangs: {gangs or 'none'}; reserved pods: {status.get('reserved_pods', 0)}"]
    hold = status.get("hold")
    lines.append(
        f"hold: {hold['job']} ({hold['seconds_left']:.0f} s left)" if hold else "hold: none"
    )
    plans = status.get("plans") or []
    if plans:
        rows = [
            [p["job"], p["members"], ",".join(p["nodes"]), f"{p['seconds_left']:.0f}s"]
            for p in plans
        ]
        lines += ["", table(rows, ["PLANNED", "MEMBERS", "NODES", "EXPIRES IN"])]
    waiting = status.get("waiting_gangs") or []
    if waiting:
        rows = [[w["job"], w["parked"], w["reason"]] for w in waiting]
        lines += ["", table(rows, ["WAITING GANG", "PARKED", "LAST REASON"])]
    return "\n".join(lines)


def render_why(answer: dict[str, Any]) -> str:
    lines = [answer["line"]]
    for key in ("job", "queue", "position", "waiting_in_queue", "node"):
        if answer.get(key) not in (None, ""):
            lines.append(f"  {key}: {answer[key]}")
    gang = answer.get("gang")
    if gang:
        lines.append(
            f"  gang: {gang['name']}, size {gang['size'] or '?'}, {gang['members']} exist, "
            f"{gang['bound']} running{', planned' if gang['planned'] else ''}"
            + (f"; {gang['problem']}" if gang["problem"] else "")
        )
    hold = answer.get("hold")
    if hold:
        lines.append(f"  hold: {hold['gang']} has it, {hold['seconds_left']:.0f} s left")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None, prog: str = "gangplank") -> int:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=os.environ.get("GANGPLANK_URL", DEFAULT_URL))
    parser.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("status", help="gangs, plans, the hold, who waits")
    queues = commands.add_parser("queues", help="usage, guarantee, max, waiting, in fair order")
    queues.add_argument("queue", nargs="?", help="one queue and its subtree")
    why = commands.add_parser("why", help="why a pod waits: queue, gang, place in line, reason")
    why.add_argument("pod", help="NAMESPACE/NAME, or NAME with -n")
    why.add_argument("-n", "--namespace", default="default")
    args = parser.parse_args(argv)
    try:
        if args.command == "status":
            data, text = _get(args.url, "/status", render_status)
        elif args.command == "queues":
            query = f"?queue={urllib.parse.quote(args.queue)}" if args.queue else ""
            data, text = _get(args.url, f"/queues{query}", render_queues)
        else:
            ref = args.pod if "/" in args.pod else f"{args.namespace}/{args.pod}"
            data, text = _get(args.url, f"/why?pod={urllib.parse.quote(ref)}", render_why)
    except ApiError as err:
        print(f"{prog}: {err}", file=sys.stderr)
        return 1
    if args.output == "json":
        print(json.dumps(data, indent=2, sort_keys=True))
    elif args.output == "yaml":
        print(yaml.safe_dump(data, sort_keys=True), end="")
    else:
        print(text)
    return 0


def _get(url: str, path: str, render: Any) -> tuple[Any, str]:
    data = fetch(url, path)
    return data, render(data)


def kubectl_plugin() -> int:
    """`kubectl gangplank …` (kubectl runs `kubectl-gangplank` found on PATH)."""
    return main(sys.argv[1:], prog="kubectl gangplank")
