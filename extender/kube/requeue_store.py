"""Requeue records kept in one ConfigMap, so that backoffs and counts outlive a restart and a
failover: the pods a controller recreates carry nothing of the evicted ones, and a gang of bare
pods has no workload object to annotate.

One data key per job: the job key made ConfigMap-key-safe (`config_key`, it round-trips), its value
the record's JSON. The store deals in plain JSON dicts; what they mean is the core's
(core.lifecycle.requeues). Writes are read-modify-replace with the resourceVersion read, so a
writer never overwrites keys another wrote meanwhile: the API server answers 409 and the write
starts again from a fresh read. `LogRequeueStore` keeps them in memory where there is no API
server (the demo, --cluster-file).
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Mapping
from typing import Any, Protocol

import orjson
from kubernetes.client.exceptions import ApiException

from extender.kube.binder import api_message

log = logging.getLogger("gangplank.requeue")

# The calls made on the ConfigMap, as RBAC verbs (manifests/base/rbac-extender.yaml grants
# exactly these; create cannot be restricted to a name, the others are).
VERBS = ("get", "create", "update")

# A ConfigMap data key: at most 253 of these characters.
_KEY_CHARS = re.compile(r"[-.a-zA-Z0-9]")
_ESCAPED = re.compile(rb"_([0-9a-f]{2})")
_MAX_KEY = 253
# Keys too long once escaped: "_h" (which escaping never writes: h is no hex digit) and a hash;
# the value then carries the job key (`_LONG_JOB`) beside the record.
_HASHED = "_h"
_LONG_JOB = "job"
_LONG_RECORD = "record"


class RequeueStoreError(RuntimeError):
    """The ConfigMap could not be read or written; the message says what the API server said."""


# What a refusal of the ConfigMap means where gangplank is deployed from manifests/ (the flag
# that names the ConfigMap filled in).
REFUSED_HINT = (
    "; gangplank's Role lets it use only the ConfigMaps it names, in the namespace gangplank is "
    "deployed in (manifests/base/rbac-extender.yaml): set $POD_NAMESPACE to that namespace or "
    "{flag} to that ConfigMap, or grant gangplank this one"
)


class RequeueStorage(Protocol):
    def load(self) -> dict[str, dict[str, Any]]:
        """Every job's record: job key -> its JSON dict (none kept: {})."""
        ...

    def save(self, changes: Mapping[str, dict[str, Any] | None]) -> None:
        """Write these jobs' records (None: delete the job's), leaving every other job's as
        it is."""
        ...


def config_key(job: str) -> str:
    """A job key as a ConfigMap data key ([-._a-zA-Z0-9], at most 253 characters), readable and
    reversible (`job_of_key`): letters, digits, "-" and "." are kept, every other byte of its
    UTF-8 is written "_" and two lowercase hex digits ("gangplank:ml/train" ->
    "gangplank_3aml_2ftrain"). Longer than 253 that way: "_h" and a SHA-256 of the job key (the
    value then names the job)."""
    escaped = "".join(
        char if _KEY_CHARS.fullmatch(char) else "".join(f"_{b:02x}" for b in char.encode())
        for char in job
    )
    if not escaped or len(escaped) > _MAX_KEY or escaped in (".", ".."):
        return _HASHED + hashlib.sha256(job.encode()).hexdigest()
    return escaped


def job_of_key(key: str) -> str | None:
    """The job key `config_key` made `key` of; None for a hashed key (the value names the job)
    or one `config_key` never makes."""
    if key.startswith(_HASHED):
        return None
    raw = _ESCAPED.sub(lambda m: bytes([int(m[1], 16)]), key.encode())
    try:
        job = raw.decode()
    except UnicodeDecodeError:
        return None
    return job if config_key(job) == key else None


class RequeueStore:
    """The records in ConfigMap `namespace/name` of the API server `core_v1_api` talks to.
    `what` they are and the `flag` that names the ConfigMap are for messages (the queues' usage
    history is kept the same way, under one key)."""

    def __init__(
        self,
        core_v1_api: Any,
        namespace: str,
        name: str,
        attempts: int = 5,
        timeout: tuple[float, float] = (2.0, 5.0),
        what: str = "requeue records",
        flag: str = "--requeue-configmap",
    ) -> None:
        self._core = core_v1_api
        self._namespace = namespace
        self._name = name
        self._attempts = attempts
        self._timeout = timeout
        self._what = what
        self._flag = flag

    @property
    def where(self) -> str:
        return f"ConfigMap {self._namespace}/{self._name}"

    def _records(self, doing: str) -> str:
        return f"cannot {doing} {self._what} {self._namespace}/{self._name}"

    def load(self) -> dict[str, dict[str, Any]]:
        """Every job's record; {} when the ConfigMap does not exist. A key or value that is not
        one this store writes is logged and skipped. Raises RequeueStoreError when the API
        server refuses or cannot be reached."""
        found = self._read()
        if found is None:
            return {}
        records: dict[str, dict[str, Any]] = {}
        for key, text in found[1].items():
            entry = _decode(key, text)
            if entry is None:
                log.warning(
                    "%s: skipping key %r, which is none of its %s", self.where, key, self._what
                )
                continue
            records[entry[0]] = entry[1]
        return records

    def save(self, changes: Mapping[str, dict[str, Any] | None]) -> None:
        """Write `changes` (job key -> record, None: delete it) over what the ConfigMap holds,
        creating it when missing; every other key is kept as read. A write that loses a race
        with another writer (409) starts again from a fresh read, up to `attempts` times.
        Raises RequeueStoreError when it cannot be done."""
        if not changes:
            return
        for _ in range(self._attempts):
            found = self._read()
            data = dict(found[1]) if found is not None else {}
            for job, record in changes.items():
                key = config_key(job)
                if record is None:
                    data.pop(key, None)
                else:
                    data[key] = _encode(job, key, record)
            if found is not None and data == found[1]:
                return  # nothing to write
            if found is None and not data:
                return  # deleting from a ConfigMap that is not there
            body: dict[str, Any] = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": self._name, "namespace": self._namespace},
                "data": data,
            }
            try:
                if found is None:
                    self._call(
                        "write", self._core.create_namespaced_config_map, self._namespace, body
                    )
                else:
                    body["metadata"]["resourceVersion"] = found[0]
                    self._call(
                        "write",
                        self._core.replace_namespaced_config_map,
                        self._name,
                        self._namespace,
                        body,
                    )
                return
            except ApiException as err:
                if err.status != 409:  # 409: changed or created by another writer since read
                    raise self._error("write", err) from None
                log.info("%s changed since read; writing again", self.where)
        raise RequeueStoreError(
            f"{self.where}: still changed by another writer after {self._attempts} attempts"
        )

    def _read(self) -> tuple[str, dict[str, str]] | None:
        """(resourceVersion, data) of the ConfigMap, or None when it does not exist."""
        try:
            obj = self._call(
                "read", self._core.read_namespaced_config_map, self._name, self._namespace
            )
        except ApiException as err:
            if err.status == 404:
                return None
            raise self._error("read", err) from None
        if not isinstance(obj, dict):
            raise RequeueStoreError(f"{self._records('read')}: the API server sent no object")
        metadata = obj.get("metadata") or {}
        data = obj.get("data") or {}
        return str(metadata.get("resourceVersion") or ""), dict(data)

    def _call(self, doing: str, method: Any, *args: Any) -> Any:
        """Call the client without its model classes: the answer's JSON, parsed. Faults other
        than an HTTP status are raised as RequeueStoreError."""
        try:
            response = method(*args, _preload_content=False, _request_timeout=self._timeout)
        except ApiException:
            raise
        except Exception as err:  # connection refused or reset, timed out: no HTTP status
            raise RequeueStoreError(
                f"{self._records(doing)}: API server unreachable: {err}"
            ) from None
        try:
            return orjson.loads(response.data)
        except orjson.JSONDecodeError:
            raise RequeueStoreError(
                f"{self._records(doing)}: the API server's answer is no JSON"
            ) from None
        finally:
            response.release_conn()

    def _error(self, doing: str, err: ApiException) -> RequeueStoreError:
        """`cannot read requeue records NS/NAME: 403 Forbidden (the API server's words)`, with
        what to do when gangplank may not."""
        words = api_message(err)
        said = f" ({words})" if words != err.reason else ""
        hint = REFUSED_HINT.format(flag=self._flag) if err.status in (401, 403) else ""
        return RequeueStoreError(f"{self._records(doing)}: {err.status} {err.reason}{said}{hint}")


class LogRequeueStore:
    """Records in memory, for runs without an API server (the demo, --cluster-file): they last
    as long as the process, which is all such a run has."""

    def __init__(self) -> None:
        self._records: dict[str, dict[str, Any]] = {}

    def load(self) -> dict[str, dict[str, Any]]:
        return {job: dict(record) for job, record in self._records.items()}

    def save(self, changes: Mapping[str, dict[str, Any] | None]) -> None:
        for job, record in changes.items():
            if record is None:
                self._records.pop(job, None)
            else:
                self._records[job] = orjson.loads(orjson.dumps(record))  # as the ConfigMap would
                log.debug("requeue record of %s: %s", job, record)


def _encode(job: str, key: str, record: Mapping[str, Any]) -> str:
    value: Mapping[str, Any] = record
    if key.startswith(_HASHED):
        value = {_LONG_JOB: job, _LONG_RECORD: record}
    return orjson.dumps(value).decode()


def _decode(key: str, text: object) -> tuple[str, dict[str, Any]] | None:
    """(job key, record) of one data entry, or None when it is not one `_encode` wrote."""
    if not isinstance(text, str):
        return None
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(value, dict):
        return None
    if key.startswith(_HASHED):
        job, record = value.get(_LONG_JOB), value.get(_LONG_RECORD)
        if not isinstance(job, str) or not isinstance(record, dict) or config_key(job) != key:
            return None
        return job, record
    decoded = job_of_key(key)
    return (decoded, value) if decoded is not None else None
