"""A small fake Kubernetes API server over real HTTP, for tests that need one.

It speaks what gangplank uses: paged lists, watches with resourceVersion and bookmarks, 410 Gone
when history is compacted, pods bound and deleted, ConfigMaps read, created, replaced and patched
with resourceVersion preconditions (409 Conflict when another writer came first) and their keys
and size checked as the API server checks them, and workloads (batch/v1 Jobs, JobSets, the
Kubeflow training jobs, RayJobs and RayClusters) read, listed and watched in a namespace and
merge-patched one by one, their `/status` apart as a status subresource is. Faults are injected
on purpose: a watch stream can be dropped mid-chunk, slowed down, stalled, or answered with 410
(as an HTTP status or as an ERROR event). Every request is recorded so tests can check what the
client asked for.
"""

from __future__ import annotations

import bisect
import copy
import json
import re
import socket
import ssl
import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

import orjson

KIND_PATHS = {
    "/api/v1/nodes": "nodes",
    "/api/v1/pods": "pods",
    "/api/v1/namespaces": "namespaces",
    "/apis/scheduling.k8s.io/v1/priorityclasses": "priorityclasses",
    "/apis/batch/v1/jobs": "jobs",
    "/apis/scheduling.volcano.sh/v1beta1/podgroups": "volcano-podgroups",
    "/apis/scheduling.x-k8s.io/v1alpha1/podgroups": "coscheduling-podgroups",
    "/apis/scheduling.k8s.io/v1alpha2/podgroups": "native-podgroups",
}
LIST_KINDS = {
    "nodes": ("v1", "NodeList"),
    "pods": ("v1", "PodList"),
    "namespaces": ("v1", "NamespaceList"),
    "priorityclasses": ("scheduling.k8s.io/v1", "PriorityClassList"),
    "jobs": ("batch/v1", "JobList"),
    "volcano-podgroups": ("scheduling.volcano.sh/v1beta1", "PodGroupList"),
    "coscheduling-podgroups": ("scheduling.x-k8s.io/v1alpha1", "PodGroupList"),
    "native-podgroups": ("scheduling.k8s.io/v1alpha2", "PodGroupList"),
}

# Workloads served one by one as well (GET, PATCH, and their /status), under
# /apis/{group}/{version}/namespaces/{namespace}/{plural}/{name}: (group, version, plural) -> the
# kind's key here and its Kind. batch/v1 Jobs are built in; the others are custom resources.
WORKLOADS: dict[tuple[str, str, str], tuple[str, str]] = {
    ("batch", "v1", "jobs"): ("jobs", "Job"),
    ("jobset.x-k8s.io", "v1alpha2", "jobsets"): ("jobsets", "JobSet"),
    ("kubeflow.org", "v1", "pytorchjobs"): ("pytorchjobs", "PyTorchJob"),
    ("kubeflow.org", "v1", "tfjobs"): ("tfjobs", "TFJob"),
    ("kubeflow.org", "v2beta1", "mpijobs"): ("mpijobs", "MPIJob"),
    ("kubeflow.org", "v1", "xgboostjobs"): ("xgboostjobs", "XGBoostJob"),
    ("kubeflow.org", "v1", "paddlejobs"): ("paddlejobs", "PaddleJob"),
    ("kubeflow.org", "v1", "jaxjobs"): ("jaxjobs", "JAXJob"),
    ("ray.io", "v1", "rayjobs"): ("rayjobs", "RayJob"),
    ("ray.io", "v1", "rayclusters"): ("rayclusters", "RayCluster"),
}
KIND_PATHS.update({f"/apis/{g}/{v}/{p}": kind for (g, v, p), (kind, _) in WORKLOADS.items()})
LIST_KINDS.update({kind: (f"{g}/{v}", f"{k}List") for (g, v, _), (kind, k) in WORKLOADS.items()})
WORKLOAD_KINDS = frozenset(kind for kind, _ in WORKLOADS.values())
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"


@dataclass(frozen=True)
class Patched:
    """A PATCH of a workload as it arrived (`body` parsed, or the raw text if it was not JSON)."""

    kind: str
    namespace: str
    name: str
    subresource: str  # "" or "status"
    content_type: str
    body: Any


@dataclass
class WatchFaults:
    """What the next watch calls of a kind do wrong."""

    gone_status: int = 0  # answer this many watch calls with HTTP 410
    gone_event: int = 0  # answer this many watch calls with an ERROR 410 event
    drop_after: int | None = None  # cut the open (or next) stream after this many more events
    delay: float = 0.0  # sleep before each event
    stall: bool = False  # send nothing at all until the client gives up


@dataclass
class Event:
    rv: int
    type: str
    obj: dict[str, Any]


@dataclass
class State:
    objects: dict[str, dict[str, dict[str, Any]]] = field(
        default_factory=lambda: {kind: {} for kind in LIST_KINDS}
    )
    events: dict[str, list[Event]] = field(default_factory=lambda: {k: [] for k in LIST_KINDS})
    compacted: dict[str, int] = field(default_factory=lambda: dict.fromkeys(LIST_KINDS, 0))
    faults: dict[str, WatchFaults] = field(
        default_factory=lambda: {kind: WatchFaults() for kind in LIST_KINDS}
    )
    rv: int = 100
    requests: list[tuple[str, str, dict[str, list[str]]]] = field(default_factory=list)
    bindings: list[dict[str, Any]] = field(default_factory=list)
    patches: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    absent: set[str] = field(default_factory=set)  # kinds whose CRD is not installed
    leases: dict[str, str] = field(default_factory=dict)  # "ns/name" -> holderIdentity
    bind_error: tuple[int, str] | None = None
    # Bindings that succeed before every later one is refused 503 (an API server failing in the
    # middle of a bind wave); None: no limit.
    bind_budget: int | None = None
    # PodDisruptionBudgets: (namespace, label selector); a matching pod may not be evicted.
    budgets: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    evictions: list[tuple[str, str, bool]] = field(default_factory=list)  # ns, name, dry run
    posted_events: list[dict[str, Any]] = field(default_factory=list)
    config_maps: dict[str, dict[str, Any]] = field(default_factory=dict)  # "ns/name" -> object
    # Namespaces whose ConfigMaps the caller may not use: refused 403, as RBAC refuses.
    forbidden_config_maps: set[str] = field(default_factory=set)
    down: bool = False  # an outage: every call answered 503, open watches cut
    workload_patches: list[Patched] = field(default_factory=list)
    # kind -> a spec field its installed version does not have: pruned from what is stored, as
    # the API server prunes unknown fields of a structural CRD (answering 200)
    pruned: dict[str, tuple[str, ...]] = field(default_factory=dict)


# What the API server accepts as a ConfigMap data key, and the most data one may hold.
CONFIG_MAP_KEY = re.compile(r"[-._a-zA-Z0-9]+")
CONFIG_MAP_BYTES = 1024 * 1024


def config_map_problem(obj: dict[str, Any]) -> str | None:
    """Why the API server would refuse this ConfigMap (422 Invalid), or None."""
    data = obj.get("data") or {}
    if not isinstance(data, dict):
        return "data: must be an object"
    size = 0
    for key, value in data.items():
        if len(key) > 253 or not CONFIG_MAP_KEY.fullmatch(key) or key in (".", ".."):
            return (
                f"data[{key}]: Invalid value: {key!r}: a valid config key must consist of "
                "alphanumeric characters, '-', '_' or '.'"
            )
        if not isinstance(value, str):
            return f"data[{key}]: must be a string"
        size += len(key) + len(value.encode())
    if size > CONFIG_MAP_BYTES:
        return f"data: Too long: must have at most {CONFIG_MAP_BYTES} bytes"
    return None


def _merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch (for a ConfigMap's maps, what a strategic merge patch does):
    objects merge, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    merged = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = _merge_patch(merged.get(key), value)
    return merged


def _workload(parts: list[str]) -> tuple[str, str, str, str] | None:
    """(kind, namespace, name, subresource) of a path to a workload or to a namespace's list of
    them (name "" then), or None when the path is not one."""
    if len(parts) < 6 or parts[0] != "apis" or parts[3] != "namespaces" or len(parts) > 8:
        return None
    served = WORKLOADS.get((parts[1], parts[2], parts[5]))
    if served is None or (len(parts) == 8 and parts[7] != "status"):
        return None
    return (
        served[0],
        parts[4],
        parts[6] if len(parts) > 6 else "",
        parts[7] if len(parts) > 7 else "",
    )


def _served(kind: str) -> tuple[str, str, str]:
    """(group, version, plural) of a workload kind."""
    return next(path for path, (served, _) in WORKLOADS.items() if served == kind)


def _resource_name(kind: str) -> str:
    """The resource as the API server's messages name it: `jobs.batch`, `rayjobs.ray.io`."""
    group, _, plural = _served(kind)
    return f"{plural}.{group}"


def _conflict(resource: str, name: str) -> str:
    return (
        f'Operation cannot be fulfilled on {resource} "{name}": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )


def _rv(event: Event) -> int:
    return event.rv


def _bookmark(rv: int) -> dict[str, Any]:
    return {"kind": "Bookmark", "metadata": {"resourceVersion": str(rv)}}


def _in(event: Event, namespace: str) -> bool:
    """Whether a namespace's watch sends `event` (bookmarks go to every watch)."""
    return event.type == "BOOKMARK" or event.obj["metadata"].get("namespace") == namespace


def _in_namespace(obj: dict[str, Any], namespace: str) -> bool:
    return bool(obj["metadata"].get("namespace") == namespace)


def _key(obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{meta.get('namespace', '')}/{meta['name']}"


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True
    # The listen backlog kube-apiserver has (Go listens with net.core.somaxconn): with
    # socketserver's default of 5, a burst of new connections (a bind wave's 8 Bindings and its
    # record beside kube-scheduler's bind) overflowed it, and a dropped SYN is sent again only
    # after a second (`loadtest/gang_start.py` saw whole gangs wait 1.0 s for one Binding).
    request_queue_size = socket.SOMAXCONN

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients hanging up (as the reflector does on purpose) are not errors here."""


class FakeApiServer:
    """Start with `with FakeApiServer() as api:`; `api.url` is the base URL."""

    def __init__(self, bookmark_every: float = 60.0, tls: ssl.SSLContext | None = None) -> None:
        """`tls`: served over HTTPS with this server context, as every real API server is."""
        # kube-apiserver's watch cache sends each watch that asked for bookmarks one a minute
        # (its defaultBookmarkFrequency), so a quiet kind's stream is never silent for long.
        self.bookmark_every = bookmark_every
        self.state = State()
        self.cond = threading.Condition()
        self._server = _QuietServer(("127.0.0.1", 0), _make_handler(self))
        self._scheme = "http"
        if tls is not None:
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
            self._scheme = "https"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self.closing = False
        # (kind, namespace) -> (resourceVersion, the objects sorted as a list answers them)
        self.listed: dict[tuple[str, str], tuple[int, list[dict[str, Any]]]] = {}

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{self._scheme}://{host!s}:{port}"

    def __enter__(self) -> FakeApiServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.closing = True
        with self.cond:
            self.cond.notify_all()
        self._server.shutdown()
        self._server.server_close()

    # ---- changing the cluster ------------------------------------------------------------------
    def put(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        """Create or update an object (ADDED or MODIFIED event)."""
        with self.cond:
            obj = copy.deepcopy(obj)
            self.state.rv += 1
            meta = obj.setdefault("metadata", {})
            meta["resourceVersion"] = str(self.state.rv)
            meta.setdefault("uid", str(uuid.uuid4()))
            if kind in WORKLOAD_KINDS:
                meta.setdefault("generation", 1)
            key = _key(obj)
            event_type = "MODIFIED" if key in self.state.objects[kind] else "ADDED"
            self.state.objects[kind][key] = obj
            self.state.events[kind].append(Event(self.state.rv, event_type, copy.deepcopy(obj)))
            self.cond.notify_all()
            return obj

    def load(self, kind: str, objects: Iterable[dict[str, Any]]) -> None:
        """Objects that were there before anyone watched (a cluster at the size of a benchmark):
        stored as given, without the copies and watch events `put` makes; a watch from an older
        resourceVersion gets 410, as after a compaction."""
        with self.cond:
            stored = self.state.objects[kind]
            for obj in objects:
                self.state.rv += 1
                obj["metadata"]["resourceVersion"] = str(self.state.rv)
                stored[_key(obj)] = obj
            self.state.compacted[kind] = self.state.rv
            self.state.events[kind] = []

    def delete(self, kind: str, namespace: str, name: str) -> None:
        with self.cond:
            obj = self.state.objects[kind].pop(f"{namespace}/{name}")
            self.state.rv += 1
            obj = copy.deepcopy(obj)
            obj["metadata"]["resourceVersion"] = str(self.state.rv)
            self.state.events[kind].append(Event(self.state.rv, "DELETED", obj))
            self.cond.notify_all()

    def bookmark(self, kind: str) -> int:
        """Advance the resourceVersion and send a BOOKMARK on open watches of `kind`."""
        with self.cond:
            self.state.rv += 1
            obj = _bookmark(self.state.rv)
            self.state.events[kind].append(Event(self.state.rv, "BOOKMARK", obj))
            self.cond.notify_all()
            return self.state.rv

    def compact(self, kind: str) -> None:
        """Forget the history of `kind`: a watch from any older resourceVersion gets 410."""
        with self.cond:
            self.state.compacted[kind] = self.state.rv
            self.state.events[kind] = []

    def install(self, kind: str) -> None:
        """Serve `kind` from now on (its CRD installed, or its API switched on)."""
        with self.cond:
            self.state.absent.discard(kind)

    def go_down(self) -> None:
        """An outage: open watches are cut and every call is answered 503 until `come_back`."""
        with self.cond:
            self.state.down = True
            self.cond.notify_all()

    def come_back(self) -> None:
        with self.cond:
            self.state.down = False
            self.cond.notify_all()

    def config_map(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The ConfigMap as stored (a copy), or None."""
        with self.cond:
            obj = self.state.config_maps.get(f"{namespace}/{name}")
            return copy.deepcopy(obj) if obj is not None else None

    def put_config_map(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Create or overwrite a ConfigMap, as another writer would: a new resourceVersion."""
        with self.cond:
            obj = copy.deepcopy(obj)
            meta = obj.setdefault("metadata", {})
            meta.setdefault("namespace", "default")
            self.state.rv += 1
            meta["resourceVersion"] = str(self.state.rv)
            meta.setdefault("uid", str(uuid.uuid4()))
            obj.update(apiVersion="v1", kind="ConfigMap")
            self.state.config_maps[_key(obj)] = obj
            return copy.deepcopy(obj)

    def config_map_calls(self) -> list[tuple[str, str]]:
        """(method, path) of every request made for ConfigMaps."""
        return [(m, p) for m, p, _ in self.state.requests if "/configmaps" in p]

    def object(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        """An object of `kind` as stored (a copy), or None."""
        with self.cond:
            obj = self.state.objects[kind].get(f"{namespace}/{name}")
            return copy.deepcopy(obj) if obj is not None else None

    def patches_of(self, kind: str) -> list[Patched]:
        """Every PATCH sent for a workload of `kind` ("jobs", "jobsets"...), in order, refused
        ones included."""
        with self.cond:
            return [p for p in self.state.workload_patches if p.kind == kind]

    def workload_calls(self, kind: str) -> list[tuple[str, str]]:
        """(method, path) of every request made for one object of `kind` or in one namespace."""
        group, version, plural = _served(kind)
        prefix = f"/apis/{group}/{version}/namespaces/"
        with self.cond:
            return [
                (m, p)
                for m, p, _ in self.state.requests
                if p.startswith(prefix) and p[len(prefix) :].split("/")[1:2] == [plural]
            ]

    def faults(self, kind: str) -> WatchFaults:
        return self.state.faults[kind]

    def watch_calls(self, kind: str) -> list[dict[str, list[str]]]:
        path = next(p for p, k in KIND_PATHS.items() if k == kind)
        return [q for m, p, q in self.state.requests if p == path and q.get("watch") == ["true"]]

    def list_calls(self, kind: str) -> list[dict[str, list[str]]]:
        path = next(p for p, k in KIND_PATHS.items() if k == kind)
        return [q for m, p, q in self.state.requests if p == path and q.get("watch") != ["true"]]


def _make_handler(api: FakeApiServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # TCP_NODELAY, as kube-apiserver's (Go sets it on every TCP connection): an answer is
        # written as headers, then body, and with Nagle's algorithm the body waited for the
        # client's delayed ACK, 40 ms on Linux, on every call after a connection's first.
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _json(self, status: int, body: dict[str, Any]) -> None:
            data = orjson.dumps(body)  # a benchmark's lists of 140,000 pods: 5x json's speed
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _status(self, code: int, reason: str, message: str) -> None:
            self._json(
                code,
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "status": "Failure",
                    "message": message,
                    "reason": reason,
                    "code": code,
                },
            )

        def _down(self) -> bool:
            if api.state.down:
                self._status(503, "ServiceUnavailable", "the API server is down (an outage)")
            return api.state.down

        def do_GET(self) -> None:
            url = urlparse(self.path)
            query = parse_qs(url.query)
            with api.cond:
                api.state.requests.append(("GET", url.path, query))
            if self._down():
                return
            parts = url.path.strip("/").split("/")
            if parts[:3] == ["apis", "coordination.k8s.io", "v1"] and len(parts) == 7:
                holder = api.state.leases.get(f"{parts[4]}/{parts[6]}")
                if holder is None:
                    self._status(404, "NotFound", f'leases "{parts[6]}" not found')
                else:
                    self._json(
                        200,
                        {
                            "apiVersion": "coordination.k8s.io/v1",
                            "kind": "Lease",
                            "metadata": {"name": parts[6], "namespace": parts[4]},
                            "spec": {"holderIdentity": holder},
                        },
                    )
                return
            if (
                len(parts) == 6
                and parts[:3] == ["api", "v1", "namespaces"]
                and parts[4] == "configmaps"
            ):
                self._config_map("GET", parts[3], parts[5], {})
                return
            workload = _workload(parts)
            if workload is not None and workload[0] not in api.state.absent:
                served, namespace, name, _ = workload
                if name:
                    self._get_workload(served, namespace, name)
                elif query.get("watch") == ["true"]:
                    self._watch(served, query, namespace)
                else:
                    self._list(served, query, namespace)
                return
            kind = KIND_PATHS.get(url.path)
            if kind is None or kind in api.state.absent:
                self._status(404, "NotFound", f"no route {url.path}")
            elif query.get("watch") == ["true"]:
                self._watch(kind, query)
            else:
                self._list(kind, query)

        def _get_workload(self, kind: str, namespace: str, name: str) -> None:
            found = api.object(kind, namespace, name)
            if found is None:
                self._status(404, "NotFound", f'{_resource_name(kind)} "{name}" not found')
            else:
                self._json(200, found)

        def _list(self, kind: str, query: dict[str, list[str]], namespace: str = "") -> None:
            """Every object of `kind` (in `namespace` if one is named), a page at a time."""
            with api.cond:
                rv = api.state.rv
                listed = api.listed.get((kind, namespace))
                if listed is None or listed[0] != rv:  # sorted once a version, not once a page
                    objects = api.state.objects[kind].values()
                    listed = (
                        rv,
                        sorted(
                            (o for o in objects if not namespace or _in_namespace(o, namespace)),
                            key=_key,
                        ),
                    )
                    api.listed[(kind, namespace)] = listed
                items = listed[1]
            limit = int(query.get("limit", ["0"])[0])
            start = int(query.get("continue", ["0"])[0] or 0)
            end = start + limit if limit else len(items)
            meta: dict[str, Any] = {"resourceVersion": str(rv)}
            if end < len(items):
                meta["continue"] = str(end)
            api_version, list_kind = LIST_KINDS[kind]
            self._json(
                200,
                {
                    "apiVersion": api_version,
                    "kind": list_kind,
                    "metadata": meta,
                    "items": items[start:end],
                },
            )

        def _chunk(self, data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        def _watch(self, kind: str, query: dict[str, list[str]], namespace: str = "") -> None:
            faults = api.state.faults[kind]
            since = int(query.get("resourceVersion", ["0"])[0] or 0)
            timeout = float(query.get("timeoutSeconds", ["30"])[0])
            with api.cond:
                if faults.gone_status > 0:
                    faults.gone_status -= 1
                    gone = True
                else:
                    gone = since < api.state.compacted[kind]
            if gone:
                self._status(410, "Expired", f"too old resource version: {since}")
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.flush()
            if faults.gone_event > 0:
                faults.gone_event -= 1
                status = {
                    "kind": "Status",
                    "code": 410,
                    "reason": "Expired",
                    "message": f"too old resource version: {since}",
                }
                self._chunk(json.dumps({"type": "ERROR", "object": status}).encode() + b"\n")
                self._chunk(b"")
                return
            deadline = time.monotonic() + timeout
            bookmarks = query.get("allowWatchBookmarks", [""])[0] == "true"
            sent = time.monotonic()
            try:
                while not api.closing:
                    if api.state.down:  # cut, as a dying API server or proxy would
                        self.connection.shutdown(socket.SHUT_RDWR)
                        return
                    with api.cond:
                        # events are kept in resourceVersion order: the first one after
                        # `since` by bisection (a scan per wake-up was quadratic in the events)
                        events = api.state.events[kind]
                        pending = events[bisect.bisect_right(events, since, key=_rv) :]
                        if namespace and pending:  # a namespace's watch: its objects only
                            newest = pending[-1].rv
                            pending = [e for e in pending if _in(e, namespace)]
                            if not pending:
                                since = newest
                        quiet = time.monotonic() - sent >= api.bookmark_every
                        if not pending and bookmarks and quiet and not faults.stall:
                            since = api.state.rv
                            pending = [Event(since, "BOOKMARK", _bookmark(since))]
                        if not pending or faults.stall:
                            remaining = deadline - time.monotonic()
                            if remaining <= 0:
                                break
                            api.cond.wait(min(remaining, 0.2))
                            continue
                    sent = time.monotonic()
                    for event in pending:
                        if faults.drop_after == 0:
                            faults.drop_after = None
                            # Cut the stream in the middle of a chunk, as a dying proxy would.
                            self.wfile.write(b'7f\r\n{"type":')
                            self.wfile.flush()
                            self.connection.shutdown(socket.SHUT_RDWR)
                            return
                        if faults.delay:
                            time.sleep(faults.delay)
                        line = json.dumps({"type": event.type, "object": event.obj}).encode()
                        self._chunk(line + b"\n")
                        since = event.rv
                        if faults.drop_after is not None:
                            faults.drop_after -= 1
                self._chunk(b"")
            except (BrokenPipeError, ConnectionResetError, OSError):
                return

        def do_PATCH(self) -> None:
            url = urlparse(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if self._down():
                return
            parts = url.path.strip("/").split("/")
            with api.cond:
                api.state.requests.append(("PATCH", url.path, {}))
            workload = _workload(parts)
            if workload is not None and workload[2]:
                self._patch_workload(*workload, raw)
                return
            try:
                body = json.loads(raw or b"{}")
            except ValueError as err:
                self._status(400, "BadRequest", f"the patch is not JSON: {err}")
                return
            if len(parts) == 6 and parts[4] == "configmaps":
                self._config_map("PATCH", parts[3], parts[5], body)
                return
            with api.cond:
                pod = None
                if len(parts) == 6 and parts[4] == "pods":
                    pod = api.state.objects["pods"].get(f"{parts[3]}/{parts[5]}")
                if pod is None:
                    self._status(404, "NotFound", f"no pod at {url.path}")
                    return
                api.state.patches.append((parts[3], parts[5], body))
                pod = copy.deepcopy(pod)
                annotations = body.get("metadata", {}).get("annotations", {})
                pod["metadata"].setdefault("annotations", {}).update(annotations)
            api.put("pods", pod)
            self._json(200, pod)

        def _patch_workload(
            self, kind: str, namespace: str, name: str, subresource: str, raw: bytes
        ) -> None:
            """Apply a merge patch to a workload, as the API server does: a strategic merge patch
            is taken as a merge patch for a Job (alike for maps and scalars such as spec.suspend;
            a list here is replaced whole, where a strategic merge would merge status.conditions
            by type) and refused for a custom resource (415: CRDs have no strategic merge); JSON
            patches and server-side apply are refused (415); a patch of /status changes the
            status only, one of the object leaves its status as it was; a change bumps the
            resourceVersion (and the generation when the spec changed), a patch that changes
            nothing bumps neither."""
            media = (self.headers.get("Content-Type") or "").split(";")[0].strip()
            try:
                body: Any = json.loads(raw)
                problem = "" if isinstance(body, dict) else "a merge patch must be a JSON object"
            except ValueError as err:
                body, problem = raw.decode(errors="replace"), f"the patch is not JSON: {err}"
            with api.cond:
                api.state.workload_patches.append(
                    Patched(kind, namespace, name, subresource, media, body)
                )
            if media not in (MERGE_PATCH, STRATEGIC_MERGE_PATCH) or (
                media == STRATEGIC_MERGE_PATCH and kind != "jobs"
            ):
                accepted = [MERGE_PATCH] + ([STRATEGIC_MERGE_PATCH] if kind == "jobs" else [])
                self._status(
                    415,
                    "UnsupportedMediaType",
                    f"the body of the request was in an unknown format ({media or 'none'}) - "
                    f"accepted media types here include: {', '.join(accepted)}",
                )
                return
            if problem:
                self._status(400, "BadRequest", f"{_resource_name(kind)} {name!r}: {problem}")
                return
            with api.cond:
                stored = api.state.objects[kind].get(f"{namespace}/{name}")
                if stored is None:
                    self._status(404, "NotFound", f'{_resource_name(kind)} "{name}" not found')
                    return
                meta = body.get("metadata")
                wanted = meta.get("resourceVersion") if isinstance(meta, dict) else None
                if wanted and wanted != stored["metadata"]["resourceVersion"]:
                    self._status(409, "Conflict", _conflict(_resource_name(kind), name))
                    return
                patched = _merge_patch(stored, body)
                gone = api.state.pruned.get(kind)
                parent = patched
                for key in (gone or ())[:-1]:
                    parent = parent.get(key) if isinstance(parent, dict) else None
                if gone and isinstance(parent, dict):
                    parent.pop(gone[-1], None)
                if not isinstance(patched.get("metadata"), dict) or (
                    patched["metadata"].get("name"),
                    patched["metadata"].get("namespace"),
                ) != (name, namespace):
                    self._status(
                        400,
                        "BadRequest",
                        f"{_resource_name(kind)} {name!r}: the patch may not change the "
                        "object's metadata.name or metadata.namespace",
                    )
                    return
                if subresource == "status":
                    new = copy.deepcopy(stored)
                    new.pop("status", None)
                    if "status" in patched:
                        new["status"] = patched["status"]
                else:
                    new = {k: v for k, v in patched.items() if k != "status"}
                    if "status" in stored:
                        new["status"] = copy.deepcopy(stored["status"])
                    new["metadata"]["uid"] = stored["metadata"]["uid"]
                    if new.get("spec") != stored.get("spec"):
                        new["metadata"]["generation"] = stored["metadata"].get("generation", 1) + 1
                new["metadata"]["resourceVersion"] = stored["metadata"]["resourceVersion"]
                if new != stored:
                    new = api.put(kind, new)
                self._json(200, new)

        def _received(self, method: str) -> tuple[Any, dict[str, Any], list[str]] | None:
            """(url, body, path parts) of a write, recorded; None when the server is down."""
            url = urlparse(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if self._down():
                return None
            with api.cond:
                api.state.requests.append((method, url.path, {}))
            return url, body, url.path.strip("/").split("/")

        def do_POST(self) -> None:
            received = self._received("POST")
            if received is None:
                return
            url, body, parts = received
            # api/v1/namespaces/{ns}/pods/{name}/binding
            if len(parts) == 7 and parts[4] == "pods" and parts[6] == "binding":
                self._bind(parts[3], parts[5], body)
            elif len(parts) == 7 and parts[4] == "pods" and parts[6] == "eviction":
                dry = parse_qs(url.query).get("dryRun") == ["All"]
                self._evict(parts[3], parts[5], body, dry)
            elif len(parts) == 5 and parts[4] == "configmaps":
                name = (body.get("metadata") or {}).get("name") or ""
                self._config_map("POST", parts[3], name, body)
            elif len(parts) == 5 and parts[4] == "events":
                with api.cond:
                    api.state.posted_events.append(body)
                self._json(201, body)
            else:
                self._status(404, "NotFound", f"no route {url.path}")

        def do_DELETE(self) -> None:
            """A pod deleted (`kubectl delete pod`, a drain): gone at once, as without kubelets."""
            received = self._received("DELETE")
            if received is None:
                return
            url, _, parts = received
            if len(parts) != 6 or parts[:3] != ["api", "v1", "namespaces"] or parts[4] != "pods":
                self._status(404, "NotFound", f"no route {url.path}")
                return
            with api.cond:
                pod = api.state.objects["pods"].get(f"{parts[3]}/{parts[5]}")
                if pod is None:
                    self._status(404, "NotFound", f'pods "{parts[5]}" not found')
                    return
                api.delete("pods", parts[3], parts[5])
            self._json(200, pod)

        def do_PUT(self) -> None:
            received = self._received("PUT")
            if received is None:
                return
            url, body, parts = received
            if len(parts) == 6 and parts[4] == "configmaps":
                self._config_map("PUT", parts[3], parts[5], body)
            else:
                self._status(404, "NotFound", f"no route {url.path}")

        def _config_map(self, method: str, namespace: str, name: str, body: Any) -> None:
            """GET, POST (create), PUT (replace) or PATCH (merge) one ConfigMap. A write that
            names a resourceVersion other than the stored one is refused 409, as is a create
            of one that exists; a PUT or PATCH of one that does not is 404."""
            key = f"{namespace}/{name}"
            with api.cond:
                if namespace in api.state.forbidden_config_maps:
                    verb = {"GET": "get", "POST": "create", "PUT": "update"}.get(method, "patch")
                    self._status(
                        403,
                        "Forbidden",
                        f'configmaps "{name}" is forbidden: User "system:serviceaccount:gangplank'
                        f':gangplank" cannot {verb} resource "configmaps" in API group "" in the '
                        f'namespace "{namespace}"',
                    )
                    return
                stored = api.state.config_maps.get(key)
                if method == "GET" or (method in ("PUT", "PATCH") and stored is None):
                    if stored is None:
                        self._status(404, "NotFound", f'configmaps "{name}" not found')
                    else:
                        self._json(200, stored)
                    return
                if method == "POST" and stored is not None:
                    self._status(409, "AlreadyExists", f'configmaps "{name}" already exists')
                    return
                if method == "PATCH" and not isinstance(body, dict):
                    self._status(415, "UnsupportedMediaType", "only merge patches here")
                    return
                meta = body.get("metadata") or {}
                wanted = meta.get("resourceVersion")
                if (
                    stored is not None
                    and wanted
                    and wanted != stored["metadata"]["resourceVersion"]
                ):
                    self._status(409, "Conflict", _conflict("configmaps", name))
                    return
                if method == "PUT" and meta.get("name") not in (None, name):
                    self._status(400, "BadRequest", "the name of the object does not match")
                    return
                new = _merge_patch(stored, body) if method == "PATCH" else copy.deepcopy(body)
                new_meta = new.setdefault("metadata", {})
                new_meta.update(name=name, namespace=namespace)
                if not name:
                    self._status(422, "Invalid", "metadata.name: Required value")
                    return
                problem = config_map_problem(new)
                if problem is not None:
                    self._status(422, "Invalid", f'ConfigMap "{name}" is invalid: {problem}')
                    return
                api.state.rv += 1
                new_meta["resourceVersion"] = str(api.state.rv)
                new_meta["uid"] = stored["metadata"]["uid"] if stored else str(uuid.uuid4())
                new.update(apiVersion="v1", kind="ConfigMap")
                api.state.config_maps[key] = new
                self._json(201 if method == "POST" else 200, new)

        def _evict(self, namespace: str, name: str, body: dict[str, Any], dry: bool) -> None:
            with api.cond:
                api.state.evictions.append((namespace, name, dry))
                pod = api.state.objects["pods"].get(f"{namespace}/{name}")
                if pod is None:
                    self._status(404, "NotFound", f'pods "{name}" not found')
                    return
                uid = ((body.get("deleteOptions") or {}).get("preconditions") or {}).get("uid")
                if uid and uid != pod["metadata"]["uid"]:
                    self._status(409, "Conflict", f"precondition UID {uid} does not match")
                    return
                labels = pod["metadata"].get("labels") or {}
                for ns, selector in api.state.budgets:
                    if ns == namespace and all(labels.get(k) == v for k, v in selector.items()):
                        self._status(
                            429,
                            "TooManyRequests",
                            "Cannot evict pod as it would violate the pod's disruption budget.",
                        )
                        return
            if not dry:
                api.delete("pods", namespace, name)  # no kubelets here: gone at once
            self._json(201, {"kind": "Status", "apiVersion": "v1", "status": "Success"})

        def _bind(self, namespace: str, name: str, body: dict[str, Any]) -> None:
            with api.cond:
                api.state.bindings.append(body)
                if api.state.bind_error is not None:
                    code, message = api.state.bind_error
                    self._status(code, "Error", message)
                    return
                if api.state.bind_budget is not None:
                    if api.state.bind_budget <= 0:
                        self._status(503, "ServiceUnavailable", "etcdserver: request timed out")
                        return
                    api.state.bind_budget -= 1
                pod = api.state.objects["pods"].get(f"{namespace}/{name}")
                if pod is None:
                    self._status(404, "NotFound", f'pods "{name}" not found')
                    return
                uid = (body.get("metadata") or {}).get("uid")
                if uid and uid != pod["metadata"]["uid"]:
                    self._status(
                        409,
                        "Conflict",
                        f"Operation cannot be fulfilled on pods/binding "
                        f'"{name}": precondition UID {uid} does not match',
                    )
                    return
                if pod["spec"].get("nodeName"):
                    self._status(
                        409,
                        "Conflict",
                        f'pod {name} is already assigned to node "{pod["spec"]["nodeName"]}"',
                    )
                    return
                pod = copy.deepcopy(pod)
                pod["spec"]["nodeName"] = body["target"]["name"]
            api.put("pods", pod)
            self._json(
                201, {"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201}
            )

    return Handler
