"""The policy file: read, validate, and follow it as it changes.

In a cluster the file is a ConfigMap mount: the kubelet writes a new directory and swaps the
`..data` symlink, so the file's own path never changes while what it resolves to does. The watcher
compares the resolved path, inode, size and modification time every `interval` seconds — a poll,
which sees a symlink swap as surely as an edit in place.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path

import yaml

from extender.core.policy import Policy, PolicyError, parse_policy

log = logging.getLogger("gangplank.policy")

Signature = tuple[str, int, int, int] | None


def load_policy(path: str | Path) -> Policy:
    """The validated policy in `path`; PolicyError names the file, the queue and the field."""
    source = str(path)
    try:
        text = Path(path).read_text()
    except OSError as err:
        raise PolicyError(f"{source}: cannot read: {err.strerror or err}") from None
    try:
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as err:
        raise PolicyError(f"{source}: not valid YAML: {err}") from None
    return parse_policy(data, source)


def signature(path: str | Path) -> Signature:
    try:
        real = os.path.realpath(path)
        st = os.stat(real)
    except OSError:
        return None
    return real, st.st_ino, st.st_size, st.st_mtime_ns


class PolicyWatcher:
    """Calls `on_policy` with each new valid policy, `on_error` with the message of each invalid
    one (the caller keeps the last good policy)."""

    def __init__(
        self,
        path: str | Path,
        on_policy: Callable[[Policy], None],
        on_error: Callable[[str], None],
        interval: float = 1.0,
    ) -> None:
        self.path = Path(path)
        self._on_policy = on_policy
        self._on_error = on_error
        self._interval = interval
        self._seen: Signature = signature(self.path)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def check(self) -> bool:
        """Reload if the file changed; True when it did (whatever the outcome)."""
        now = signature(self.path)
        if now == self._seen:
            return False
        self._seen = now
        if now is None:
            log.warning("policy %s is gone; the last policy stays in force", self.path)
            return True
        try:
            policy = load_policy(self.path)
        except PolicyError as err:
            log.error("policy reload refused, the last good policy stays in force: %s", err)
            self._on_error(str(err))
            return True
        log.info("policy reloaded from %s: %d queues", self.path, len(policy.queues))
        self._on_policy(policy)
        return True

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="policy-watch", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self.check()
            except Exception:  # never let the watcher die
                log.exception("policy watcher")

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2)
