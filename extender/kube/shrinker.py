"""Taking an elastic gang's extras back through their workload (`core/preemption/shrinks.py`):
its size lowered with a JSON merge patch, its controller removing the pods.

The workload is read first: the patch is sent only if every field still has the size gangplank
decided from (at the resourceVersion read, so nothing changed in between), and it records the
size before the first shrink in the annotation `gangplank.io/shrunk-from` (kept by later ones).
The same patch gives the size back one member at a time (`core/preemption/regrow.py`); the
annotation goes once the recorded size is reached. An Event on the workload says what was
changed, why and for whom.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson
from kubernetes.client.exceptions import ApiException

from extender.core.model.keys import SHRUNK_FROM
from extender.core.preemption.shrinks import Shrink
from extender.kube.binder import api_message
from extender.kube.events import post_event

log = logging.getLogger("gangplank.evict")
MERGE_PATCH = "application/merge-patch+json"
REASON = "ElasticExtrasTakenBack"
GROWN = "ElasticSizeGivenBack"


def shrink(custom: Any, core: Any, s: Shrink, why: str, timeout: tuple[float, float]) -> str:
    """Resize `s`'s workload (lower it; or raise it, `to` above `current`, toward the size its
    annotation records, which goes once it is reached): shrunk or grown, gone (no such workload)
    or failed (its size changed since, or the API server refused)."""
    growing = s.to > s.current
    doing = "raising" if growing else "lowering"
    group, _, version = s.api_version.rpartition("/")
    where = (group, version, s.namespace, s.plural, s.name)
    try:
        response = custom.get_namespaced_custom_object(
            *where, _preload_content=False, _request_timeout=timeout
        )
        try:
            obj = orjson.loads(response.data)
        finally:
            response.release_conn()
        sizes = [_at(obj, path) for path in s.fields]
        if any(size != s.current for size in sizes):
            log.info(
                "not %s %s: its %s are %s now, not %d as decided; %s",
                doing,
                s.shown,
                s.what,
                sizes,
                s.current,
                "left as it is" if growing else "its extras stay",
            )
            return "failed"
        metadata = obj.get("metadata") or {}
        annotations = metadata.get("annotations") or {}
        was: str | None = annotations.get(SHRUNK_FROM, str(s.current))
        if growing and (was is None or not was.isdigit() or s.to >= int(was)):
            was = None  # back at its size: the record goes
        body: dict[str, Any] = {
            **s.patch(),
            "metadata": {
                "resourceVersion": metadata.get("resourceVersion"),
                "annotations": {SHRUNK_FROM: was},
            },
        }
        response = custom.patch_namespaced_custom_object(
            *where,
            body,
            _preload_content=False,
            _request_timeout=timeout,
            _content_type=MERGE_PATCH,
        )
        response.drain_conn()  # read to the end: a connection back in the pool must be clean
        response.release_conn()
    except ApiException as err:
        log.warning("%s %s: HTTP %s: %s", doing, s.shown, err.status, api_message(err))
        return "gone" if err.status == 404 else "failed"
    except Exception as err:  # connection refused or reset, timed out
        log.warning("%s %s: %s", doing, s.shown, err)
        return "failed"
    involved = {
        "apiVersion": s.api_version,
        "kind": s.kind,
        "namespace": s.namespace,
        "name": s.name,
        **({"uid": metadata["uid"]} if isinstance(metadata.get("uid"), str) else {}),
    }
    done = "raised" if growing else "lowered"
    message = f"gangplank {done} its {s.what} from {s.current} to {s.to}: {why}"
    reason = GROWN if growing else REASON
    post_event(core, involved, reason, message, warning=not growing, timeout=timeout)
    return "grown" if growing else "shrunk"


def _at(obj: Any, path: tuple[str, ...]) -> object:
    for key in path:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj
