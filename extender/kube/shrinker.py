"""Taking an elastic gang's extras back through their workload (`core/preemption/shrinks.py`):
its size lowered with a JSON merge patch, its controller removing the pods.

The workload is read first: the patch is sent only if every field still has the size gangplank
decided from (at the resourceVersion read, so nothing changed in between), and it records the
size before the first shrink in the annotation `gangplank.io/shrunk-from` (kept by later ones):
gangplank does not give the size back itself (docs/elastic.md), the annotation says what it was.
An Event on the workload says what was lowered, why and for whom.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson
from kubernetes.client.exceptions import ApiException

from extender.core.preemption.shrinks import Shrink
from extender.kube.binder import api_message
from extender.kube.events import post_event

log = logging.getLogger("gangplank.evict")
MERGE_PATCH = "application/merge-patch+json"
SHRUNK_FROM = "gangplank.io/shrunk-from"  # a workload's size before gangplank first lowered it
REASON = "ElasticExtrasTakenBack"


def shrink(custom: Any, core: Any, s: Shrink, why: str, timeout: tuple[float, float]) -> str:
    """Lower `s`'s workload: shrunk, gone (no such workload) or failed (its size changed since,
    or the API server refused)."""
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
                "not lowering %s: its %s are %s now, not %d as decided; its extras stay",
                s.shown,
                s.what,
                sizes,
                s.current,
            )
            return "failed"
        metadata = obj.get("metadata") or {}
        annotations = metadata.get("annotations") or {}
        body: dict[str, Any] = {
            **s.patch(),
            "metadata": {
                "resourceVersion": metadata.get("resourceVersion"),
                "annotations": {SHRUNK_FROM: annotations.get(SHRUNK_FROM, str(s.current))},
            },
        }
        response = custom.patch_namespaced_custom_object(
            *where,
            body,
            _preload_content=False,
            _request_timeout=timeout,
            _content_type=MERGE_PATCH,
        )
        response.release_conn()
    except ApiException as err:
        log.warning("lowering %s: HTTP %s: %s", s.shown, err.status, api_message(err))
        return "gone" if err.status == 404 else "failed"
    except Exception as err:  # connection refused or reset, timed out
        log.warning("lowering %s: %s", s.shown, err)
        return "failed"
    involved = {
        "apiVersion": s.api_version,
        "kind": s.kind,
        "namespace": s.namespace,
        "name": s.name,
        **({"uid": metadata["uid"]} if isinstance(metadata.get("uid"), str) else {}),
    }
    message = f"gangplank lowered its {s.what} from {s.current} to {s.to}: {why}"
    post_event(core, involved, REASON, message, warning=True, timeout=timeout)
    return "shrunk"


def _at(obj: Any, path: tuple[str, ...]) -> object:
    for key in path:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj
