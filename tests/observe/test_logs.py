"""`--log-format json`: one JSON object per line; every record of an extender call carries the
call's request id, verb and pod."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest

from extender.observe.logs import configure_logging
from extender.service.runtime import Runtime
from extender.service.settings import SettingsError, parse_serve_settings
from extender.web.app import create_app
from tests.builders import fixture


@pytest.fixture
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    logging.getLogger("gangplank").setLevel(logging.NOTSET)


def test_json_lines_carry_the_request_id_verb_and_pod_of_each_call(
    runtime: Runtime, restore_logging: None, capsys: pytest.CaptureFixture[str]
) -> None:
    configure_logging("debug", "json")
    client = create_app(runtime).test_client()
    body = fixture("filter.nodenames.json")
    client.post("/scheduler/filter", json=body)
    client.post("/scheduler/filter", json=body)
    records = [json.loads(line) for line in capsys.readouterr().err.splitlines() if line]
    answered = [r for r in records if r["message"] == "filter answered 200"]
    assert len(answered) == 2
    meta = body["Pod"]["metadata"]
    assert all(r["pod"] == f"{meta['namespace']}/{meta['name']}" for r in answered)
    assert all(r["verb"] == "filter" and r["level"] == "DEBUG" for r in answered)
    assert len({r["request_id"] for r in answered}) == 2, "one id per call"


def test_text_lines_end_with_the_request_id(
    runtime: Runtime, restore_logging: None, capsys: pytest.CaptureFixture[str]
) -> None:
    configure_logging("info", "text")
    client = create_app(runtime).test_client()
    client.post("/scheduler/filter", data=b"{not json", content_type="application/json")
    line = next(x for x in capsys.readouterr().err.splitlines() if "bad request" in x)
    assert " INFO gangplank.web: filter: bad request" in line and " request_id=" in line


def test_an_unknown_log_format_is_refused() -> None:
    with pytest.raises(SystemExit):
        parse_serve_settings(["--log-format", "xml"], {})
    with pytest.raises(SettingsError, match="log format"):
        parse_serve_settings([], {"GANGPLANK_LOG_FORMAT": "xml"})
