"""A step of the periodic pass that keeps failing is told once a minute, with the error's short
text, and once more when it works again: a pass runs every half second, and a traceback a pass
drowned everything else gangplank logs (21,000 lines in minutes for a ConfigMap it could not read).
"""

from __future__ import annotations

import logging

import pytest
from kubernetes.client.exceptions import ApiException

from extender.kube.requeue_store import RequeueStoreError
from extender.service.steps import Steps

FORBIDDEN = RequeueStoreError(
    "cannot read requeue records gangplank/gangplank-requeues: 403 Forbidden"
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def fails(err: Exception) -> None:
    raise err


def told(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "periodic pass: step" in r.getMessage()]


def test_a_step_failing_every_pass_for_three_minutes_is_told_once_a_minute_and_when_it_works(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock, counted = Clock(), list[str]()
    steps = Steps(counted.append, clock=clock)
    with caplog.at_level(logging.INFO, logger="gangplank.kick"):
        for _ in range(360):  # a pass every 0.5 s for 3 minutes
            assert steps.run("requeues-read", lambda: fails(FORBIDDEN)) is None
            clock.now += 0.5
        assert steps.run("requeues-read", lambda: 7) == 7
        steps.run("requeues-read", lambda: None)
    lines = told(caplog)
    assert len(counted) == 360, "every failure counted (gangplank_periodic_errors_total)"
    assert len(lines) == 4, lines
    assert lines[0] == (
        "periodic pass: step 'requeues-read' failed; the pass goes on (told again once a minute "
        "while it fails): cannot read requeue records gangplank/gangplank-requeues: "
        "403 Forbidden"
    )
    assert lines[1].startswith(
        "periodic pass: step 'requeues-read' still fails (120 time(s) since the last line, "
        "for 60 s in all): cannot read requeue records"
    )
    assert "still fails" in lines[2]
    assert lines[3] == (
        "periodic pass: step 'requeues-read' works again (it failed 360 time(s) over 180 s)"
    )
    assert not any(r.exc_info for r in caplog.records), "no traceback for a fault told in words"


@pytest.mark.parametrize(
    "err,short,traceback",
    [
        (FORBIDDEN, "cannot read requeue records gangplank/gangplank-requeues", False),
        (
            ApiException(status=503, reason="Service Unavailable"),
            "HTTP 503 Service Unavailable: Service Unavailable",
            False,
        ),
        (ConnectionResetError("reset by peer"), "reset by peer", False),
        (KeyError("n7"), "KeyError: 'n7'", True),
    ],
    ids=[
        "a store's error says it in words: no traceback",
        "the API server's refusal: its status and words",
        "a connection fault: its message",
        "a bug: its type, and the traceback once",
    ],
)
def test_the_first_failure_is_one_line_with_the_traceback_only_for_a_bug(
    caplog: pytest.LogCaptureFixture, err: Exception, short: str, traceback: bool
) -> None:
    steps = Steps(lambda step: None, clock=Clock())
    with caplog.at_level(logging.ERROR, logger="gangplank.kick"):
        steps.run("decide", lambda: fails(err))
        steps.run("decide", lambda: fails(err))
    (record,) = caplog.records
    assert short in record.getMessage()
    assert bool(record.exc_info) is traceback


def test_each_step_is_told_on_its_own(caplog: pytest.LogCaptureFixture) -> None:
    steps = Steps(lambda step: None, clock=Clock())
    with caplog.at_level(logging.ERROR, logger="gangplank.kick"):
        for _ in range(3):
            steps.run("requeues-read", lambda: fails(FORBIDDEN))
            steps.run("requeues-kept", lambda: fails(FORBIDDEN))
    assert [line.split("'")[1] for line in told(caplog)] == ["requeues-read", "requeues-kept"]


def test_a_step_run_per_item_that_fails_for_one_and_works_for_the_next_is_told_no_more_often(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    steps = Steps(lambda step: None, clock=clock)
    with caplog.at_level(logging.INFO, logger="gangplank.kick"):
        for _ in range(240):  # 2 minutes: a nudge that fails, then one that works, each pass
            steps.run("nudge", lambda: fails(ConnectionResetError("reset by peer")))
            steps.run("nudge", lambda: None)
            clock.now += 0.5
    lines = told(caplog)
    assert len(lines) <= 2 * 2 + 1, lines
    assert "failed" in lines[0] and "works again" in lines[1]
