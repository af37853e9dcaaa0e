"""Leader election: whether this replica's kube-scheduler holds the scheduler's Lease.

Two gangplank replicas run, each beside its own kube-scheduler; only the scheduler holding the
Lease calls its gangplank. The periodic pass nudges parked pods and carries out evictions only
while it leads (`service/kicker.py`); the answer is read from the Lease, cached for a moment.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from typing import Any, Protocol

import orjson
from kubernetes.client.exceptions import ApiException

log = logging.getLogger("gangplank.kick")


class Leadership(Protocol):
    def is_leader(self) -> bool: ...

    def last_known(self) -> bool:
        """The last answer, without asking the API server (for metrics)."""
        ...


class AlwaysLeader:
    """A scheduler that runs without leader election is always the one scheduling."""

    def is_leader(self) -> bool:
        return True

    def last_known(self) -> bool:
        return True


class LeaseLeadership:
    """Leader while the scheduler's Lease is held by this pod (holderIdentity `<pod>_<uuid>`)."""

    def __init__(
        self,
        coordination: Any,
        namespace: str,
        name: str,
        identity: str,
        cache_seconds: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._api = coordination
        self._namespace = namespace
        self._name = name
        self._identity = identity
        self._cache_seconds = cache_seconds
        self._clock = clock
        self._checked = float("-inf")
        self._leader = False
        self._asked = 0  # reads of the Lease begun: only the newest may set the answer

    def last_known(self) -> bool:
        return self._leader

    def is_leader(self) -> bool:
        now = self._clock()
        if now - self._checked < self._cache_seconds:
            return self._leader
        self._checked = now
        self._asked += 1
        asked = self._asked
        try:
            response = self._api.read_namespaced_lease(
                self._name, self._namespace, _preload_content=False, _request_timeout=(2, 3)
            )
            holder = (orjson.loads(response.data).get("spec") or {}).get("holderIdentity") or ""
            response.release_conn()  # `.data` read the whole body
        except ApiException as err:
            if err.status != 404:
                log.warning(
                    "cannot read Lease %s/%s: HTTP %s", self._namespace, self._name, err.status
                )
            holder = ""
        except Exception as err:  # API server unreachable: keep the last answer
            log.warning("cannot read Lease %s/%s: %s", self._namespace, self._name, err)
            return self._leader
        if asked == self._asked:
            # a read begun earlier on another thread, answered late, must not undo what a later
            # read found (a Lease just lost would look held again until the next read)
            self._leader = holder == self._identity or holder.startswith(f"{self._identity}_")
        return self._leader


def default_identity() -> str:
    return os.environ.get("POD_NAME") or os.environ.get("HOSTNAME") or ""
