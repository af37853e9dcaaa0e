"""Logging: plain text or JSON lines (`--log-format json`, python-json-logger), every record made
while answering an extender call carrying that call's request id, verb and pod."""

from __future__ import annotations

import itertools
import logging
import os
from contextvars import ContextVar
from typing import Any

from pythonjsonlogger.json import JsonFormatter

LOG_FORMATS = ("text", "json")
_call: ContextVar[dict[str, str]] = ContextVar("gangplank_call", default={})  # noqa: B039


# A random prefix per process and a counter after it (uuid4 reads the OS's random source on
# every call: a system call per request). A forked worker draws its own prefix.
_ids = itertools.count(1)
_prefix = os.urandom(4).hex()


def _new_prefix() -> None:
    global _prefix
    _prefix = os.urandom(4).hex()


os.register_at_fork(after_in_child=_new_prefix)


def begin_call(verb: str) -> str:
    """Start a call's context; returns its request id (unique in the process, and across
    processes with near certainty)."""
    request_id = f"{_prefix}{next(_ids):08x}"
    _call.set({"request_id": request_id, "verb": verb})
    return request_id


def note_pod(namespace: str, name: str) -> None:
    _call.set({**_call.get(), "pod": f"{namespace}/{name}"})


def current_call() -> dict[str, str]:
    """The fields of the call being answered in this context (empty outside a call)."""
    return _call.get()


def end_call() -> None:
    _call.set({})


class CallContext(logging.Filter):
    """Adds the current call's fields (request_id, verb, pod) to every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        for key, value in _call.get().items():
            setattr(record, key, value)
        return True


def configure_logging(level: str, form: str = "text") -> None:
    handler = logging.StreamHandler()
    handler.addFilter(CallContext())
    if form == "json":
        formatter: logging.Formatter = JsonFormatter(
            "{asctime}{levelname}{name}{message}",
            style="{",
            rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
        )
    else:
        formatter = _TextFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    logging.getLogger("gangplank").setLevel(level.upper())


class _TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        extra: dict[str, Any] = {
            k: getattr(record, k) for k in ("request_id", "pod") if hasattr(record, k)
        }
        return text + "".join(f" {k}={v}" for k, v in extra.items())
