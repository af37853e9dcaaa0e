"""The `gangplank` command."""

from __future__ import annotations

import os
import socket
import sys
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from extender import __version__
from extender.cli.args import (
    ExamplesFormatter,
    Parser,
    port,
    positive_float,
    positive_int,
    quiet_when_the_reader_leaves,
    unwritable_out,
)
from extender.cli.client import (
    CLIENT_COMMANDS,
    GLOBAL_FLAGS,
    add_client_commands,
    add_global_flags,
    check_global_flags,
    client_url,
    run,
)
from extender.service.settings import (
    Settings,
    SettingsError,
    add_serve_arguments,
    settings_from_args,
)


def build_parser() -> Parser:
    parser = Parser(
        prog="gangplank",
        description="A Kubernetes scheduler extender for gang scheduling, queues and placement.",
    )
    parser.add_argument("--version", action="version", version=f"gangplank {__version__}")
    add_global_flags(parser, tuple(GLOBAL_FLAGS))
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = commands.add_parser(
        "serve", help="serve the extender under gunicorn", description="Serve the extender."
    )
    add_serve_arguments(serve, os.environ)

    demo = commands.add_parser(
        "demo",
        help="gangplank under gunicorn on a simulated cluster, a generated workload driven "
        "through it over HTTP, a live view and a report (--curl: one call of each verb)",
        description="Run gangplank under gunicorn on a simulated cluster, no Kubernetes "
        "needed: a generated workload driven through it over HTTP, a live view and a report "
        "(--curl: one call of each verb, printed as curl commands).",
    )
    demo.add_argument("--port", type=port, default=18888, help="port gangplank serves on")
    demo.add_argument("--once", action="store_true", help="exit at the end instead of serving on")
    demo.add_argument(
        "--curl",
        action="store_true",
        help="the curl walk-through instead: one call of each verb on the example cluster",
    )
    demo.add_argument("--jobs", type=positive_int, default=30, help="jobs in the live demo")
    demo.add_argument(
        "--seconds", type=positive_float, default=25.0, help="seconds over which the jobs arrive"
    )
    demo.add_argument("--out", default="demo-report", help="directory for the report")

    from extender.sim import simulate as simulate_module
    from extender.sim import simulate_args

    simulate = commands.add_parser(
        "simulate",
        help="replay a workload on a simulated cluster through gangplank (and without it): "
        "waits, allocation, fair share, what-if",
        description=simulate_module.__doc__,
        formatter_class=ExamplesFormatter,
    )
    simulate_args.add_arguments(simulate)

    probe = commands.add_parser(
        "probe", help="exit 0 when a local endpoint answers 200 (for exec probes)"
    )
    probe.add_argument("endpoint", choices=("healthz", "readyz"))
    add_global_flags(probe, ("url",))

    policy = commands.add_parser(
        "policy", help="check a policy file, or import Kueue/Volcano queues"
    )
    policy_commands = policy.add_subparsers(dest="policy_command", required=True)
    check = policy_commands.add_parser(
        "check", help="validate a policy file offline (exit 0 valid, 2 invalid)"
    )
    check.add_argument("file", help="the policy YAML (-: standard input)")
    convert = policy_commands.add_parser(
        "import",
        help="convert Kueue ClusterQueue/LocalQueue/Cohort and Volcano Queue manifests into a "
        "policy (YAML on stdout; what could not be mapped on stderr)",
    )
    convert.add_argument("files", nargs="+", metavar="FILE", help="YAML manifests; - for stdin")

    add_client_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    return quiet_when_the_reader_leaves(lambda: _main(argv))


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.command in CLIENT_COMMANDS:
        return run(args, parser, "gangplank")
    check_global_flags(args, parser, ("url",) if args.command == "probe" else ())
    if args.command == "policy":
        from extender.policy.cli import check_policy, import_policy

        if args.policy_command == "check":
            return check_policy(args.file)
        return import_policy(args.files)
    if args.command == "serve":
        if args.worker_class == "gevent":
            _patch_ssl_for_gevent()
        try:
            settings = settings_from_args(args)
            _check_cluster_access(settings)
        except SettingsError as err:
            print(f"gangplank serve: {err}", file=sys.stderr)
            return 2
        from extender.service.server import serve as run_server

        return run_server(settings)
    if args.command == "simulate":
        from extender.sim.simulate import main as simulate_main

        return simulate_main(args)
    if args.command == "demo":
        problem = None if args.curl else unwritable_out("--out", args.out)  # --curl writes none
        if problem is not None:
            print(f"gangplank demo: {problem}", file=sys.stderr)
            return 2
        if args.curl:
            from extender.cli.demo import run_demo

            return run_demo(port=args.port, once=args.once)
        from extender.sim.live import run_live_demo

        return run_live_demo(args.port, args.once, args.jobs, args.seconds, Path(args.out))
    return _probe(f"{client_url(args, parser).rstrip('/')}/{args.endpoint}")


def _check_bind(bind: str) -> None:
    """The address can be listened on (gunicorn retried five times, then stopped with a page of
    its lines)."""
    if bind.startswith(("unix:", "fd://")) or {"GUNICORN_FD", "LISTEN_FDS"} & os.environ.keys():
        return  # a socket handed over open: the demo's, gunicorn's USR2 upgrade (whose old
        # master still listens on the port), systemd's socket activation
    host, port = bind.removeprefix("tcp://").rsplit(":", 1)
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host.strip("[]") or None, int(port), type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gunicorn binds
            probe.bind(address)
    except OSError as err:
        raise SettingsError(f"--bind {bind}: cannot listen there: {err.strerror or err}") from None


def _patch_ssl_for_gevent() -> None:
    """gevent's ssl, before anything imports the kubernetes client. The gevent worker patches
    the standard library when it starts, but the master (this process) has imported urllib3 by
    then (the kubeconfig's namespace is read with the kubernetes client), and urllib3 holds
    ssl's own SSLContext: in the worker every call to an HTTPS API server ended in a
    RecursionError. ssl alone is patched here; the worker patches the rest, and the arbiter's
    signals, sleeps and child reaping stay the standard library's."""
    from gevent import monkey

    monkey.patch_ssl()


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


def _check_cluster_access(settings: Settings) -> None:
    """Refuse, before gunicorn starts, a way to the API server that cannot work here (in the
    worker it would end in a page of gunicorn's lines)."""
    _check_bind(settings.bind)
    if settings.cluster_file:
        from extender.cache.static import ClusterFileError, load_cluster_file
        from extender.cache.store import ClusterStore

        try:  # read once here, so that a mistake is one line and not a worker that fails to boot
            load_cluster_file(Path(settings.cluster_file), ClusterStore())
        except ClusterFileError as err:
            raise SettingsError(str(err)) from None
        return
    if settings.in_cluster:
        if not os.environ.get("KUBERNETES_SERVICE_HOST"):
            raise SettingsError(
                "--in-cluster: not in a pod ($KUBERNETES_SERVICE_HOST is not set); pass "
                "--kubeconfig, or --cluster-file for a fixed view"
            )
    elif settings.kubeconfig:
        # $KUBECONFIG may list several files, as for kubectl: one of them must be there.
        paths = [p for p in settings.kubeconfig.split(os.pathsep) if p]
        if not any(Path(p).expanduser().is_file() for p in paths):
            raise SettingsError(f"--kubeconfig {settings.kubeconfig}: no such file")
    elif not Path("~/.kube/config").expanduser().is_file():
        raise SettingsError(
            "no kubeconfig: --kubeconfig and $KUBECONFIG are not set and ~/.kube/config is not "
            "there; pass --kubeconfig, --in-cluster (in a pod) or --cluster-file"
        )
