"""Read a pod watch event from its JSON line without building the whole object.

Parsing an event into Python dicts and lists costs more than everything else done with it, and most
of what it builds is never read: managedFields, the conditions' times and messages, the container
states but the waiting reason, the spec of a pod already converted. So a line is first read against
a schema of only what decides whether the pod changed for gangplank (msgspec skips the rest without
building it): the event's type, the pod's uid, resourceVersion and deletionTimestamp, the status
fields gangplank reads (phase, startTime, restart counts, the Ready condition's status, the
containers' waiting reasons: of each condition and container status only those members are built),
and, kept as the raw JSON text, the spec and the labels, annotations and ownerReferences. Those
texts make a "quick" fingerprint (the name, namespace and creationTimestamp, read when the pod was
first converted, never change for a uid); when it is the one the memo kept for the pod (or, for a
binding, that of the kept unbound pod with the nodeName member cut), the pod is brought up to date
from the status fields (cache.pod_memo). Otherwise, or for anything this schema does not expect (a
field of another type: the full conversion then says what is wrong), the line is parsed in full as
before.

The fingerprint of a listed pod (no line: the list came as one page) is made from the parsed
objects written out again by orjson, which writes JSON as the API server does (compact, fields in
order); where the two texts differ (the API server escapes <, > and & in strings) the pod's next
event is read in full once and the line's fingerprint is kept from then on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec
import orjson
from msgspec import Raw, Struct

# What the fast reading handles; anything else (ERROR events first) goes to the full parse.
CHANGES = frozenset({"ADDED", "MODIFIED", "DELETED"})
_SEP = b"\0"


class _Meta(Struct, gc=False):
    # name, namespace and creationTimestamp are read in full when the pod is first converted:
    # like the uid, the API server never lets them change.
    uid: str | None = None
    resourceVersion: str | None = None
    deletionTimestamp: Any = None
    labels: Raw = Raw()
    annotations: Raw = Raw()
    ownerReferences: Raw = Raw()


class _Waiting(Struct, gc=False):
    reason: str | None = None


class _State(Struct, gc=False):
    waiting: _Waiting | None = None  # (running and terminated are skipped)


class _ContainerStatus(Struct, gc=False):
    restartCount: int = 0
    state: _State | None = None


class _Condition(Struct, gc=False):
    type: str | None = None
    status: str | None = None


class Status(Struct, gc=False):
    """The status fields a pod's conversion reads (convert.pod_phase, pod_started,
    pod_restarts, pod_ready, pod_waiting_reason), as written: None when absent. Of each
    condition only its type and status are read, of each container its restart count and
    waiting reason."""

    phase: str | None = None
    startTime: str | None = None
    conditions: list[_Condition] | None = None
    initContainerStatuses: list[_ContainerStatus] | None = None
    containerStatuses: list[_ContainerStatus] | None = None

    def summary(self) -> tuple[int, bool, str]:
        """(restarts, ready, waiting reason) as the conversion works them out (convert.
        pod_restarts, pod_ready, pod_waiting_reason): the containers' restart counts summed,
        whether a Ready condition is "True", the first waiting reason of the init containers
        then the others. Plain loops, each list looked at only when there is one: this runs
        for every line, and with the restarts summed by a generator (convert.restart_total)
        it took 0.9-1.3 us on a kubelet's status of five conditions, against 0.4."""
        restarts, waiting = 0, ""
        init, statuses, conditions = (
            self.initContainerStatuses,
            self.containerStatuses,
            self.conditions,
        )
        if init:
            for container in init:
                state = container.state
                if state is not None and state.waiting is not None and state.waiting.reason:
                    waiting = state.waiting.reason
                    break
        if statuses:
            for container in statuses:
                if container.restartCount > 0:
                    restarts += container.restartCount
                if not waiting:
                    state = container.state
                    if state is not None and state.waiting is not None and state.waiting.reason:
                        waiting = state.waiting.reason
        if conditions:
            for condition in conditions:
                if condition.type == "Ready" and condition.status == "True":
                    return restarts, True, waiting
        return restarts, False, waiting


_NO_STATUS = Status()


class _Object(Struct, gc=False):
    metadata: _Meta | None = None
    spec: Raw = Raw()
    status: Status | None = None


class _Event(Struct, gc=False):
    type: str
    object: _Object | None = None


class PodLine(Struct, gc=False):
    """What the fast reading took from a line. `quick` is 0 for a BOOKMARK."""

    type: str
    version: str | None
    uid: str
    quick: int
    deleting: bool
    status: Status
    pod: _Object | None = None  # for `bound`


class _Binding(Struct, gc=False):
    nodeName: str | None = None


_events = msgspec.json.Decoder(_Event)
_bindings = msgspec.json.Decoder(_Binding)
_NODE_NAME = b'"nodeName":"'


def read(line: bytes | str) -> PodLine | None:
    """The line's event as far as the memo needs it, or None: parse it in full (an ERROR or
    unknown event, a pod without a uid, fields of unexpected types, or not JSON at all)."""
    try:
        event = _events.decode(line)
    except msgspec.MsgspecError:
        return None
    obj = event.object
    meta = obj.metadata if obj is not None else None
    if event.type == "BOOKMARK":
        return PodLine("BOOKMARK", meta.resourceVersion if meta else None, "", 0, False, _NO_STATUS)
    if event.type not in CHANGES or obj is None or meta is None or not meta.uid:
        return None
    quick = _quick(obj.spec, meta)
    deleting = meta.deletionTimestamp is not None
    status = obj.status or _NO_STATUS
    return PodLine(event.type, meta.resourceVersion, meta.uid, quick, deleting, status, obj)


def _quick(spec: bytes | Raw, meta: _Meta) -> int:
    # The texts joined by a byte JSON never holds unescaped (absent: empty): one hash.
    return hash(_SEP.join((spec, meta.labels, meta.annotations, meta.ownerReferences)))


def bound(line: PodLine) -> tuple[int, str] | None:
    """(the quick fingerprint the line would have without its spec.nodeName, that node name), or
    None when its spec names no node: how a pod's binding is recognised as the only change since
    its last line, without parsing it in full. The member is cut from the text as the API server
    writes it (a node name needs no escaping); the node is checked to be the spec's own
    nodeName, so a fingerprint equal to that of the unbound text kept means exactly that member
    was added."""
    if line.pod is None or line.pod.metadata is None:
        return None
    spec = bytes(line.pod.spec)
    at = spec.find(_NODE_NAME)
    if at < 0:
        return None
    start = at + len(_NODE_NAME)
    end = spec.find(b'"', start)
    if end < 0:
        return None
    node = spec[start:end].decode()
    try:
        if not node or _bindings.decode(spec).nodeName != node:
            return None
    except (msgspec.MsgspecError, UnicodeDecodeError):
        return None
    if spec[end + 1 : end + 2] == b",":  # the member and the comma after it
        cut = spec[:at] + spec[end + 2 :]
    elif spec[at - 1 : at] == b",":  # the last member: the comma before it
        cut = spec[: at - 1] + spec[end + 1 :]
    else:  # the only member
        cut = spec[:at] + spec[end + 1 :]
    return _quick(cut, line.pod.metadata), node


def quick_of_object(raw: Mapping[str, Any]) -> int | None:
    """The quick fingerprint of a parsed Pod, as `read` makes it of a line orjson wrote."""
    metadata = raw.get("metadata")
    if not isinstance(metadata, dict):
        return None
    try:
        texts = _SEP.join(
            orjson.dumps(part[key]) if key in part else b""
            for part, key in (
                (raw, "spec"),
                (metadata, "labels"),
                (metadata, "annotations"),
                (metadata, "ownerReferences"),
            )
        )
    except (orjson.JSONEncodeError, TypeError):
        return None
    return hash(texts)
