"""`gangplank status|why|queues|pods` and the kubectl plugin `kubectl gangplank …`: read the
running extender's read-only JSON API and print what people ask — tables by default, `-o
json|yaml` for scripts.

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
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from extender.cli.args import (
    ExamplesFormatter,
    Parser,
    above,
    base_url,
    quiet_when_the_reader_leaves,
)
from extender.core.model.quantity import format_age

DEFAULT_URL = "http://127.0.0.1:18888"
# A waiting gang's reason before kube-scheduler has sent any of its members (as `why` says it).
NOT_ASKED = "no reason recorded yet (kube-scheduler has not asked gangplank about it)"


class ApiError(Exception):
    pass


def fetch(base: str, path: str) -> Any:
    url = f"{base.rstrip('/')}{path}"
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            body = response.read()
    except urllib.error.HTTPError as err:
        try:
            message = json.loads(err.read()).get("Error", "")
        except (ValueError, AttributeError):
            message = ""
        raise ApiError(message or f"{url}: HTTP {err.code}") from err
    except urllib.error.URLError as err:
        raise ApiError(unreachable(base, err.reason)) from err
    except (OSError, ValueError) as err:  # a timeout, a reset; a URL urllib cannot use
        raise ApiError(unreachable(base, err)) from err
    try:
        return json.loads(body)
    except ValueError:
        raise ApiError(f"{url} did not answer gangplank's JSON: is --url a gangplank?") from None


def unreachable(base: str, reason: object) -> str:
    return (
        f"cannot reach gangplank at {base} ({reason}): run `kubectl -n gangplank port-forward "
        "deploy/gangplank 18888` or pass --url"
    )


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
    history = report.get("usageHistory")
    rows = []
    for q in report["queues"]:
        row = [
            q.get("name", ""),
            amounts(q.get("used", {})),
            amounts(q.get("guarantee", {})),
            amounts(q.get("max", {})),
            amounts(q.get("borrowed", {})),
            (q.get("pending") or {}).get("jobs", 0),
        ]
        if history:
            recent = (q.get("decayedUsage") or {}).get("nvidia.com/gpu", "-")
            row += [recent.removesuffix(" GPU-hours"), f"{q.get('shareNow', 0):.2f}"]
        rows.append([*row, f"{q.get('share', 0):.2f}"])
    rows.sort(key=lambda r: float(str(r[-1])))
    head = ["QUEUE", "GPUS USED", "GUARANTEE", "MAX", "BORROWED", "WAITING"]
    if history:
        head += ["RECENT GPU-H", "SHARE NOW"]
    text = (
        table(rows, [*head, "SHARE"]) + "\n(in fair order: the lowest share over weight goes next"
    )
    if not history:
        return text + ")"
    if not history.get("known"):
        return text + f"; usage history not used: {history['lost']})"
    text += (
        f"; SHARE counts recent use, halved every {duration(history['halfLifeSeconds'])}, "
        "with current use)"
    )
    reasons = [q["behind"] for q in report["queues"] if q.get("behind")]
    return "\n".join([text, *reasons])


def render_status(status: dict[str, Any]) -> str:
    gangs = ", ".join(f"{k} {v}" for k, v in sorted(status.get("gangs", {}).items()))
    lines = [f"{what} rules paused: {why}" for what, why in (status.get("paused") or {}).items()]
    lines.append(f"gangs: {gangs or 'none'}; reserved pods: {status.get('reservedPods', 0)}")
    hold = status.get("hold")
    lines.append(
        f"hold: freed capacity is kept for {hold['job']}, first in line "
        f"({hold['secondsLeft']:.0f} s left)"
        if hold
        else "hold: none"
    )
    plans = status.get("plans") or []
    if plans:
        rows = [
            [
                p["job"],
                p["members"],
                p.get("bound", 0),
                ",".join(p["nodes"]) or "-",
                f"{p['secondsLeft']:.0f}s",
            ]
            for p in plans
        ]
        lines += ["", table(rows, ["PLANNED", "MEMBERS", "BOUND", "NODES", "EXPIRES IN"])]
    waiting = status.get("waitingGangs") or []
    if waiting:
        rows = [[w["job"], w["parked"], w["reason"] or NOT_ASKED] for w in waiting]
        lines += ["", table(rows, ["WAITING GANG", "PARKED", "LAST REASON"])]
    held = status.get("heldJobs") or []
    if held:
        rows = [[h["job"], h["requeues"], h["reason"]] for h in held]
        lines += ["", table(rows, ["HELD (UNTIL A PERSON ACTS)", "REQUEUES", "WHY"])]
    saved = status.get("lifecycle") or {}
    if any(saved.values()):
        waste = saved.get("waste", {})
        lines.append(
            "held and not used: "
            + (", ".join(f"{k} {v / 3600:.1f} GPU-h" for k, v in sorted(waste.items())) or "none")
            + "; freed: "
            + (
                ", ".join(f"{k} {v:.0f} GPUs" for k, v in sorted(saved.get("freed", {}).items()))
                or "none"
            )
            + "; requeues: "
            + (
                ", ".join(f"{k} {v:.0f}" for k, v in sorted(saved.get("requeues", {}).items()))
                or "none"
            )
        )
    idle = status.get("idleJobs") or []
    if idle:
        lines += ["", table([[i["job"], i["reason"]] for i in idle], ["IDLE JOB", "WHY"])]
    return "\n".join(lines)


def render_why(answer: dict[str, Any]) -> str:
    lines = [answer["line"]]
    if answer.get("job"):
        lines.append(f"  job: {answer['job']}")
    if answer.get("queue"):
        place = ""
        if answer.get("position"):
            place = f" ({answer['position']} of {answer['waitingInQueue']} waiting in line)"
        lines.append(f"  queue: {answer['queue']}{place}")
    elif answer.get("queueProblem"):
        lines.append(f"  queue: {answer['queueProblem']}")
    if answer.get("fairOrder"):
        lines.append(f"  fair order: {answer['fairOrder']}")
    if answer.get("node"):
        lines.append(f"  node: {answer['node']}")
    gang = answer.get("gang")
    if gang:
        lines.append(
            f"  gang: {gang['name']}, size {gang['size'] or '?'}, {gang['members']} exist, "
            f"{gang['bound']} running{', planned' if gang['planned'] else ''}"
            + (f"; {gang['problem']}" if gang["problem"] else "")
        )
    hold = answer.get("hold")
    if hold:
        whose = "this job" if hold["job"] == answer.get("job") else hold["job"]
        lines.append(
            f"  hold: freed capacity is kept for {whose}, first in line "
            f"({hold['secondsLeft']:.0f} s left)"
        )
    return "\n".join(lines)


def render_pods(answer: dict[str, Any]) -> str:
    pods = answer.get("pods") or []
    if not pods:
        return "no pods"
    rows = [
        [
            p["pod"],
            p.get("gang") or "-",
            p.get("queue") or "-",
            p["state"],
            duration(p["waitingSeconds"]) if "waitingSeconds" in p else "-",
        ]
        for p in pods
    ]
    text = table(rows, ["POD", "GANG", "QUEUE", "STATE", "WAITING"])
    more = answer.get("total", len(pods)) - len(pods)
    if more > 0:
        text += f"\n({more} more: raise --limit, or narrow with --queue, --waiting or -n)"
    return text


def duration(seconds: float) -> str:
    """`45s`, `12m`, `3h`, `2d`, as kubectl shows ages."""
    return format_age(seconds)


OUTPUTS = ("table", "json", "yaml")
# The flags every reading command shares, accepted before or after the command: (flags, options).
# Both copies (the top parser's and the command's) default to SUPPRESS, so neither undoes the
# other; `resolve` fills in the defaults after parsing.
GLOBAL_FLAGS: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    "url": (
        ("--url",),
        {
            "type": base_url,
            "metavar": "URL",
            "help": "base URL of the running extender "
            f"(default: $GANGPLANK_URL, else {DEFAULT_URL})",
        },
    ),
    "output": (
        ("-o", "--output"),
        {"choices": OUTPUTS, "help": "table, or json or yaml for scripts (default: table)"},
    ),
    "namespace": (
        ("-n", "--namespace"),
        {
            "metavar": "NAMESPACE",
            "help": "why: the namespace of a POD given as NAME (default: default); pods: list "
            "only this namespace (default: all)",
        },
    ),
}
# Which global flags each reading command takes.
COMMAND_FLAGS = {
    "status": ("url", "output"),
    "queues": ("url", "output"),
    "why": ("url", "output", "namespace"),
    "pods": ("url", "output", "namespace"),
}
CLIENT_COMMANDS = tuple(COMMAND_FLAGS)


def add_global_flags(
    parser: argparse.ArgumentParser, names: Sequence[str], helps: Mapping[str, str] | None = None
) -> None:
    """The global flags `names` on `parser`; `helps`: a command's own help for some of them."""
    group = parser.add_argument_group("global flags (before or after the command)")
    for name in names:
        flags, options = GLOBAL_FLAGS[name]
        options = {**options, "help": (helps or {}).get(name, options["help"])}
        group.add_argument(*flags, dest=name, default=argparse.SUPPRESS, **options)


def add_client_commands(commands: Any) -> None:
    """`status`, `queues`, `why POD` and `pods` on a subparsers action."""
    status = commands.add_parser(
        "status",
        help="gangs, plans and their nodes, the hold, who waits",
        description="Gangs by state, plans and their nodes, the hold, and the gangs that wait.",
    )
    queues = commands.add_parser(
        "queues",
        help="usage, guarantee, max, waiting, in fair order",
        description="Each queue's usage, guarantee, max, borrowing and waiting jobs, in fair "
        "order.",
    )
    queues.add_argument("queue", nargs="?", help="one queue and its subtree (default: all)")
    why = commands.add_parser(
        "why",
        help="why a pod waits: queue, gang, place in line, reason",
        description="Why a pod waits (or where it runs): its queue, gang, place in line and the "
        "last reason gangplank gave.",
    )
    why.add_argument("pod", help="NAMESPACE/NAME, or NAME with -n")
    pods = commands.add_parser(
        "pods",
        help="the pods gangplank holds: waiting first, with queue, gang and state",
        description="The pods gangplank schedules (their schedulerName is one of its profiles) "
        "or accounts for (they name a queue or a gang): waiting ones first, oldest first. A pod "
        "that finished outside a gang, or was deleted, is not held.",
    )
    pods.add_argument("--queue", help="only this queue and its subtree")
    pods.add_argument("--waiting", action="store_true", help="only pods not on a node yet")
    pods.add_argument(
        "--limit", type=above(int, 0, most=100_000), default=200, help="at most this many pods"
    )
    add_global_flags(status, COMMAND_FLAGS["status"])
    add_global_flags(queues, COMMAND_FLAGS["queues"])
    add_global_flags(
        why,
        COMMAND_FLAGS["why"],
        {"namespace": "namespace of a POD given as NAME (default: default)"},
    )
    add_global_flags(
        pods, COMMAND_FLAGS["pods"], {"namespace": "only this namespace (default: all)"}
    )


def client_url(args: argparse.Namespace, parser: argparse.ArgumentParser) -> str:
    """--url, else $GANGPLANK_URL (checked like the flag), else the port-forward's."""
    if hasattr(args, "url"):
        return str(args.url)
    url = os.environ.get("GANGPLANK_URL") or DEFAULT_URL
    try:
        return base_url(url)
    except argparse.ArgumentTypeError as err:
        parser.error(f"$GANGPLANK_URL: {err}")


def check_global_flags(
    args: argparse.Namespace, parser: argparse.ArgumentParser, taken: Sequence[str]
) -> None:
    """A global flag given before a command that does not take it is a mistake, not ignored."""
    for name in GLOBAL_FLAGS:
        if hasattr(args, name) and name not in taken:
            *others, last = [c for c, names in COMMAND_FLAGS.items() if name in names]
            flag = "/".join(GLOBAL_FLAGS[name][0])
            parser.error(f"{flag} goes with {', '.join(others)} and {last}, not {args.command}")


def run(args: argparse.Namespace, parser: argparse.ArgumentParser, prog: str) -> int:
    """Ask the extender, print the answer."""
    check_global_flags(args, parser, COMMAND_FLAGS[args.command])
    url = client_url(args, parser)
    output = getattr(args, "output", "table")
    namespace = getattr(args, "namespace", None)
    if args.command == "why":
        parts = args.pod.split("/")
        if len(parts) > 2 or not all(parts):  # a usage mistake (exit 2), not "pod not found"
            parser.error(f"pod {args.pod!r} is not NAME or NAMESPACE/NAME")
    try:
        if args.command == "status":
            data, text = _get(url, "/status", render_status)
        elif args.command == "queues":
            query = f"?queue={urllib.parse.quote(args.queue)}" if args.queue else ""
            data, text = _get(url, f"/queues{query}", render_queues)
        elif args.command == "pods":
            params = {"queue": args.queue, "namespace": namespace, "limit": args.limit}
            if args.waiting:
                params["waiting"] = "true"
            query = urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
            data, text = _get(url, f"/pods?{query}", render_pods)
        else:
            ref = args.pod if "/" in args.pod else f"{namespace or 'default'}/{args.pod}"
            data, text = _get(url, f"/why?pod={urllib.parse.quote(ref)}", render_why)
    except ApiError as err:
        print(f"{prog}: {err}", file=sys.stderr)
        return 1
    if output == "json":
        print(json.dumps(data, indent=2, sort_keys=True))
    elif output == "yaml":
        print(yaml.safe_dump(data, sort_keys=True), end="")
    else:
        print(text)
    return 0


def main(argv: Sequence[str] | None = None, prog: str = "gangplank") -> int:
    parser = Parser(prog=prog, description=__doc__, formatter_class=ExamplesFormatter)
    add_global_flags(parser, tuple(GLOBAL_FLAGS))
    add_client_commands(parser.add_subparsers(dest="command", required=True, metavar="COMMAND"))
    return run(parser.parse_args(argv), parser, prog)


def _get(url: str, path: str, render: Any) -> tuple[Any, str]:
    data = fetch(url, path)
    return data, render(data)


def kubectl_plugin() -> int:
    """`kubectl gangplank …` (kubectl runs `kubectl-gangplank` found on PATH)."""
    return quiet_when_the_reader_leaves(lambda: main(sys.argv[1:], prog="kubectl gangplank"))
