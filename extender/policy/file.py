"""The policy file: read, validate, and follow it as it changes.

In a cluster the file is a ConfigMap mount: the kubelet writes a new directory and swaps the
`..data` symlink, so the file's own path never changes while what it resolves to does. The watcher
compares the resolved path, inode, size and modification time every `interval` seconds — a poll,
which sees a symlink swap as surely as an edit in place.

YAML is read strictly: a key given twice in one map (`guarantee` twice in a queue) is refused
with its line, where a plain YAML loader would keep the last one without a word.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node

from extender.core.queues.policy import Policy
from extender.core.queues.policy_parse import PolicyError, parse_policy
from extender.core.queues.policy_resources import resource_warnings

log = logging.getLogger("gangplank.policy")

Signature = tuple[str, int, int, int] | None


_MERGE = "tag:yaml.org,2002:merge"


class DuplicateKeyError(yaml.YAMLError):
    """A key given twice in one YAML map; the message names both lines."""


class StrictLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """yaml's safe loader (the C one where built) that refuses a key given twice in one map."""

    def construct_mapping(self, node: Node, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, MappingNode):
            lines: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == _MERGE:  # `<<: *base`: keys written next to it override it
                    continue
                key = self.construct_object(key_node, deep=True)
                line = key_node.start_mark.line + 1
                try:
                    first = lines.get(key)
                except TypeError:  # an unhashable key: the constructor below says so
                    continue
                if first is not None:
                    raise DuplicateKeyError(
                        f"line {line}: {key!r} is given twice in one map (first on line {first}); "
                        "remove one"
                    )
                lines[key] = line
        mapping: dict[Any, Any] = super().construct_mapping(node, deep)
        return mapping


def strict_load(text: str) -> Any:
    """One YAML document; yaml.YAMLError (DuplicateKeyError for a key given twice)."""
    return yaml.load(text, Loader=StrictLoader)  # a safe loader


def strict_load_all(text: str) -> Iterator[Any]:
    """Every YAML document of a stream, as `strict_load` reads one."""
    return yaml.load_all(text, Loader=StrictLoader)  # a safe loader


def yaml_message(source: str, text: str, err: yaml.YAMLError) -> str:
    """What is wrong with the YAML of `source`, in one line that starts `file:line`: a tab that
    indents a line is said to be one (PyYAML calls it a character that cannot start a token)."""
    if isinstance(err, DuplicateKeyError):
        return f"{source}: {err}"
    if not isinstance(err, yaml.MarkedYAMLError) or err.problem_mark is None:
        return f"{source}: not valid YAML: {' '.join(str(err).split())}"
    mark, context = err.problem_mark, err.context_mark
    lines = text.splitlines()
    for number in range(context.line if context else mark.line, mark.line + 1):
        line = lines[number] if number < len(lines) else ""
        if "\t" in line[: len(line) - len(line.lstrip(" \t"))]:
            return (
                f"{source}:{number + 1}: a tab indents this line; YAML cannot be indented with "
                "tabs: indent it with spaces"
            )
    where = f" ({err.context} that starts on line {context.line + 1})" if context else ""
    return f"{source}:{mark.line + 1}:{mark.column + 1}: not valid YAML: {err.problem}{where}"


def not_text(source: str, err: UnicodeDecodeError) -> str:
    return f"{source}: not a text file (byte {err.start} is not UTF-8)"


def policy_text(path: str | Path) -> str:
    """The text of the file `path`; PolicyError when it cannot be read or is not text."""
    try:
        return Path(path).read_text()
    except OSError as err:
        raise PolicyError(f"{path}: cannot read: {err.strerror or err}") from None
    except UnicodeDecodeError as err:
        raise PolicyError(not_text(str(path), err)) from None


def load_policy(path: str | Path) -> Policy:
    """The validated policy in `path`; PolicyError names the file, the queue and the field. Its
    `warnings` name resource names that look mistyped (it loads all the same)."""
    return policy_from_text(policy_text(path), str(path))


def policy_from_text(text: str, source: str) -> Policy:
    """The validated policy written in `text` (read from `source`, which errors name)."""
    try:
        data = strict_load(text)
    except yaml.YAMLError as err:
        raise PolicyError(yaml_message(source, text, err)) from None
    return parse_policy(data, source)


def log_warnings(policy: Policy, offered: Collection[str] = ()) -> None:
    """Log what looks wrong in a policy being put in force (`resource_warnings`: against the
    cluster's resources where they are known)."""
    for warning in resource_warnings(policy, offered) if offered else policy.warnings:
        log.warning("policy warning: %s", warning)


def signature(path: str | Path) -> Signature:
    try:
        real = os.path.realpath(path)
        st = os.stat(real)
    except OSError:
        return None
    return real, st.st_ino, st.st_size, st.st_mtime_ns


class PolicyWatcher:
    """Calls `on_policy` with each new valid policy, `on_error` with the message of each invalid
    one (the caller keeps the last good policy). A new policy's warnings are logged, against
    the resources `offered` names (what the cluster's nodes offer and its pods ask for)."""

    def __init__(
        self,
        path: str | Path,
        on_policy: Callable[[Policy], None],
        on_error: Callable[[str], None],
        interval: float = 1.0,
        offered: Callable[[], Collection[str]] = frozenset,
    ) -> None:
        self.path = Path(path)
        self._on_policy = on_policy
        self._on_error = on_error
        self._interval = interval
        self._offered = offered
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
        log_warnings(policy, self._offered())
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
