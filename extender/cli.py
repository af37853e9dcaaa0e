"""The `gangplank` command."""

from __future__ import annotations

import argparse
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from extender import __version__
from extender.settings import SettingsError, add_serve_arguments, settings_from_args

CLIENT_COMMANDS = ("status", "why", "queues")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if (argv and argv[0] in CLIENT_COMMANDS) or (argv[:1] == ["--url"] or argv[:1] == ["-o"]):
        from extender.client_cli import main as client_main

        return client_main(argv)
    parser = argparse.ArgumentParser(
        prog="gangplank",
        description="A Kubernetes scheduler extender for gang scheduling, queues and placement.",
    )
    parser.add_argument("--version", action="version", version=f"gangplank {__version__}")
    commands = parser.add_subparsers(
        dest="command",
        required=True,
        description="also: status, why POD, queues (read a running extender; see `gangplank "
        "status --help`)",
    )

    serve = commands.add_parser("serve", help="serve the extender under gunicorn")
    add_serve_arguments(serve, os.environ)

    demo = commands.add_parser(
        "demo",
        help="gangplank under gunicorn on a simulated cluster, a generated workload driven "
        "through it over HTTP, a live view and a report (--curl: one call of each verb)",
    )
    demo.add_argument("--port", type=int, default=18888)
    demo.add_argument("--once", action="store_true", help="exit at the end instead of serving on")
    demo.add_argument(
        "--curl",
        action="store_true",
        help="the curl walk-through instead: one call of each verb on the example cluster",
    )
    demo.add_argument("--jobs", type=int, default=30, help="jobs in the live demo")
    demo.add_argument(
        "--seconds", type=float, default=25.0, help="seconds over which the jobs arrive"
    )
    demo.add_argument("--out", default="demo-report", help="directory for the report")

    simulate = commands.add_parser(
        "simulate",
        help="replay a workload on a simulated cluster through gangplank (and without it): "
        "waits, allocation, fair share, what-if",
    )
    from extender.sim.simulate import add_arguments as add_simulate_arguments

    add_simulate_arguments(simulate)

    probe = commands.add_parser(
        "probe", help="exit 0 when a local endpoint answers 200 (for exec probes)"
    )
    probe.add_argument("endpoint", choices=("healthz", "readyz"))
    probe.add_argument(
        "--url",
        default="http://127.0.0.1:18888",
        help="base URL of the extender (default %(default)s)",
    )

    policy = commands.add_parser(
        "policy", help="check a policy file, or import Kueue/Volcano queues"
    )
    policy_commands = policy.add_subparsers(dest="policy_command", required=True)
    check = policy_commands.add_parser(
        "check", help="validate a policy file offline (exit 0 valid, 2 invalid)"
    )
    check.add_argument("file")
    convert = policy_commands.add_parser(
        "import",
        help="convert Kueue ClusterQueue/LocalQueue/Cohort and Volcano Queue manifests into a "
        "policy (YAML on stdout; what could not be mapped on stderr)",
    )
    convert.add_argument("files", nargs="+", metavar="FILE", help="YAML manifests; - for stdin")

    args = parser.parse_args(argv)
    if args.command == "policy":
        from extender.policy_cli import check_policy, import_policy

        if args.policy_command == "check":
            return check_policy(args.file)
        return import_policy(args.files)
    if args.command == "serve":
        try:
            settings = settings_from_args(args)
        except SettingsError as err:
            print(f"gangplank serve: {err}", file=sys.stderr)
            return 2
        from extender.server import serve as run_server

        return run_server(settings)
    if args.command == "simulate":
        from extender.sim.simulate import main as simulate_main

        return simulate_main(args)
    if args.command == "demo":
        if args.curl:
            from extender.demo import run_demo

            return run_demo(port=args.port, once=args.once)
        from extender.sim.live import run_live_demo

        return run_live_demo(args.port, args.once, args.jobs, args.seconds, Path(args.out))
    return _probe(f"{args.url.rstrip('/')}/{args.endpoint}")


def _probe(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=3) as response:
            print(response.read().decode())
            return 0
    except urllib.error.HTTPError as err:
        print(f"{url}: HTTP {err.code} {err.read().decode(errors='replace')}", file=sys.stderr)
    except OSError as err:
        print(f"{url}: {err}", file=sys.stderr)
    return 1
