"""The policy's `lifecycle:` rules: each field read, the defaults, a queue's section laid over its
ancestors' and the top level's field by field, and every mistake refused with file, queue and
field."""

from __future__ import annotations

from typing import Any

import pytest

from extender.core.queues.lifecycle import (
    IdleGpu,
    LifecycleOverride,
    LifecycleRules,
    Requeue,
    describe_lifecycle,
    format_duration,
    merged,
    parse_duration,
)
from extender.core.queues.lifecycle_parse import parse_lifecycle
from extender.core.queues.policy import Policy
from extender.core.queues.policy_parse import PolicyError, parse_policy
from tests.builders import policy_doc, queue

FULL = {
    "readyTimeout": "10m",
    "requeue": {"backoff": "1m", "maxBackoff": "1h", "limit": 3},
    "staleGangGrace": "5m",
    "maxRuntime": "72h",
    "restartLimit": 2,
    "idleGpu": {"below": 7.5, "for": "30m", "action": "reclaim-first"},
}


def with_lifecycle(top: Any = None, *queues: dict[str, Any]) -> Policy:
    doc = policy_doc(*queues)
    if top is not None:
        doc["lifecycle"] = top
    return parse_policy(doc, "policy.yaml")


def test_every_field_of_a_lifecycle_section_is_read() -> None:
    assert with_lifecycle(FULL).lifecycle == LifecycleRules(
        ready_timeout=600.0,
        requeue=Requeue(backoff=60.0, max_backoff=3600.0, limit=3),
        stale_gang_grace=300.0,
        max_runtime=72 * 3600.0,
        restart_limit=2,
        idle_gpu=IdleGpu(below=7.5, window=1800.0, action="reclaim-first"),
    )


@pytest.mark.parametrize(
    "written,seconds",
    [
        (90, 90.0),
        (2.5, 2.5),
        ("90", 90.0),
        ("90s", 90.0),
        ("10m", 600.0),
        ("1h", 3600.0),
        ("1h30m", 5400.0),
        ("2h45m30s", 9930.0),
        ("1.5h", 5400.0),
        ("500ms", 0.5),
        ("7d", 604800.0),
        ("1d12h", 129600.0),
        ("0", 0.0),
        (0, 0.0),
        ("0s", 0.0),
    ],
)
def test_a_duration_is_seconds_or_written_go_style(written: Any, seconds: float) -> None:
    assert parse_duration(written) == seconds
    assert with_lifecycle({"maxRuntime": written}).lifecycle == LifecycleRules(max_runtime=seconds)


def test_preemptions_min_runtime_reads_durations_the_same_way() -> None:
    policy = parse_policy({**policy_doc(), "preemption": {"minRuntime": "1.5h"}})
    assert policy.defaults.min_runtime == 5400.0
    with pytest.raises(PolicyError, match=r"^policy.yaml: preemption.minRuntime: '-1m' is neg"):
        parse_policy({**policy_doc(), "preemption": {"minRuntime": "-1m"}}, "policy.yaml")


def test_a_duration_is_written_back_the_way_a_policy_writes_it() -> None:
    assert [format_duration(s) for s in (0, 0.5, 45, 90, 600, 3600, 5400, 9930)] == [
        "0s",
        "0.5s",
        "45s",
        "1m30s",
        "10m",
        "1h",
        "1h30m",
        "2h45m30s",
    ]


def test_an_empty_section_has_every_default_and_switches_no_rule_on() -> None:
    rules = with_lifecycle({}).lifecycle
    assert rules == LifecycleRules()
    assert rules == LifecycleRules(
        ready_timeout=0.0,
        requeue=Requeue(backoff=60.0, max_backoff=3600.0, limit=5),
        stale_gang_grace=0.0,
        max_runtime=0.0,
        idle_gpu=None,
        restart_limit=5,
    )


def test_an_idle_gpu_section_left_empty_switches_the_rule_on_with_its_defaults() -> None:
    rules = with_lifecycle({"idleGpu": {}}).lifecycle
    assert rules is not None
    assert rules.idle_gpu == IdleGpu(below=5.0, window=1800.0, action="report")


def test_a_policy_with_no_lifecycle_anywhere_has_none_for_any_queue() -> None:
    policy = with_lifecycle(None, queue("ml"), queue("vision", parent="ml"))
    assert policy.lifecycle is None
    assert [policy.lifecycle_of(q) for q in ("ml", "vision", None, "unknown")] == [None] * 4


def test_a_queue_without_a_section_of_its_own_gets_the_top_levels_rules() -> None:
    policy = with_lifecycle(FULL, queue("ml"), queue("vision", parent="ml"))
    assert policy.lifecycle_of("vision") == policy.lifecycle_of("ml") == policy.lifecycle
    assert policy.lifecycle_of(None) == policy.lifecycle
    assert policy.lifecycle_of("not-in-the-policy") == policy.lifecycle


def test_a_queues_fields_override_the_top_level_and_the_rest_stay() -> None:
    policy = with_lifecycle(
        {"readyTimeout": "10m", "idleGpu": {"below": 5, "for": "30m", "action": "report"}},
        queue("team-a", lifecycle={"maxRuntime": "72h", "idleGpu": {"action": "evict"}}),
        queue("team-b"),
    )
    assert policy.lifecycle_of("team-a") == LifecycleRules(
        ready_timeout=600.0,
        max_runtime=72 * 3600.0,
        idle_gpu=IdleGpu(below=5.0, window=1800.0, action="evict"),
    )
    assert policy.lifecycle_of("team-b") == LifecycleRules(
        ready_timeout=600.0, idle_gpu=IdleGpu(below=5.0, window=1800.0, action="report")
    )


def test_the_nearest_section_wins_field_by_field_top_level_then_parent_then_child() -> None:
    policy = with_lifecycle(
        {"readyTimeout": "10m", "maxRuntime": "24h", "requeue": {"backoff": "1m", "limit": 5}},
        queue("research", lifecycle={"maxRuntime": "48h", "requeue": {"limit": 2}}),
        queue("vision", parent="research", lifecycle={"readyTimeout": "20m"}),
        queue("nlp", parent="research"),
    )
    assert policy.lifecycle_of("research") == LifecycleRules(
        ready_timeout=600.0, max_runtime=48 * 3600.0, requeue=Requeue(backoff=60.0, limit=2)
    )
    assert policy.lifecycle_of("vision") == LifecycleRules(
        ready_timeout=1200.0, max_runtime=48 * 3600.0, requeue=Requeue(backoff=60.0, limit=2)
    )
    assert policy.lifecycle_of("nlp") == policy.lifecycle_of("research")


def test_a_queue_section_alone_lays_its_fields_over_the_defaults() -> None:
    policy = with_lifecycle(
        None,
        queue("notebooks", lifecycle={"idleGpu": {"for": "1h", "action": "evict"}}),
        queue("training"),
    )
    assert policy.lifecycle is None
    assert policy.lifecycle_of("notebooks") == LifecycleRules(
        idle_gpu=IdleGpu(below=5.0, window=3600.0, action="evict")
    )
    assert policy.lifecycle_of("training") is None


def test_a_queue_turns_a_rule_off_with_0_and_the_idle_rule_with_false() -> None:
    policy = with_lifecycle(
        {"readyTimeout": "10m", "idleGpu": {"action": "evict"}},
        queue("interactive", lifecycle={"readyTimeout": 0, "idleGpu": False}),
    )
    assert policy.lifecycle_of("interactive") == LifecycleRules()


def test_a_child_turns_back_on_the_idle_rule_its_parent_turned_off_from_the_defaults() -> None:
    top = LifecycleOverride({"idle_gpu": True, "idle_gpu.below": 10.0})
    off = LifecycleOverride({"idle_gpu": False})
    on = LifecycleOverride({"idle_gpu": True, "idle_gpu.action": "evict"})
    assert merged(top.over(LifecycleRules()), [off, on]) == LifecycleRules(
        idle_gpu=IdleGpu(action="evict")
    )
    assert merged(None, [None, None]) is None


def test_a_section_writes_only_what_it_names() -> None:
    section = parse_lifecycle({"requeue": {"limit": 2}, "idleGpu": {"for": "1h"}}, "lifecycle", _no)
    assert section is not None
    assert section.fields == {"requeue.limit": 2, "idle_gpu": True, "idle_gpu.window": 3600.0}
    assert section.writes("requeue") and section.writes("idle_gpu")
    assert not LifecycleOverride({"max_runtime": 60.0}).writes("requeue")
    assert parse_lifecycle(None, "lifecycle", _no) is None


def test_the_rules_are_described_in_one_line_in_the_policys_words() -> None:
    assert describe_lifecycle(LifecycleRules()) == (
        "readyTimeout off, requeue 1m to 1h, held after 5, staleGangGrace off, maxRuntime none, "
        "restartLimit 5, idleGpu off"
    )
    rules = with_lifecycle(FULL).lifecycle
    assert rules is not None
    assert describe_lifecycle(rules) == (
        "readyTimeout 10m, requeue 1m to 1h, held after 3, staleGangGrace 5m, maxRuntime 72h, "
        "restartLimit 2, idleGpu below 7.5% for 30m: reclaim-first"
    )


def _no(where: str, problem: str) -> Exception:
    return AssertionError(f"{where}: {problem}")


NOT_A_DURATION = "is not a duration (seconds, or like 90s, 10m, 1h30m)"
BAD: list[tuple[str, Any, Any, str]] = [
    (
        "an unknown key at the top level",
        {"readyTimout": "10m"},
        None,
        "policy.yaml: lifecycle: unknown field 'readyTimout' (known: readyTimeout, requeue, "
        "staleGangGrace, maxRuntime, restartLimit, idleGpu)",
    ),
    (
        "an unknown key in a queue",
        None,
        {"maxRunTime": "1h"},
        "policy.yaml: queue team-a: lifecycle: unknown field 'maxRunTime'",
    ),
    (
        "an unknown key in requeue",
        None,
        {"requeue": {"backof": "1m"}},
        "policy.yaml: queue team-a: lifecycle.requeue: unknown field 'backof' (known: backoff, "
        "maxBackoff, limit)",
    ),
    (
        "an unknown key in idleGpu",
        {"idleGpu": {"window": "30m"}},
        None,
        "policy.yaml: lifecycle.idleGpu: unknown field 'window' (known: below, for, action)",
    ),
    (
        "a section that is not a map",
        None,
        ["maxRuntime"],
        "policy.yaml: queue team-a: lifecycle: must be a map",
    ),
    (
        "idleGpu true",
        None,
        {"idleGpu": True},
        "policy.yaml: queue team-a: lifecycle.idleGpu: must be a map (below, for, action), "
        "not True",
    ),
    (
        "an unknown idle action",
        None,
        {"idleGpu": {"action": "kill"}},
        "policy.yaml: queue team-a: lifecycle.idleGpu.action: 'kill' is not one of report, "
        "reclaim-first, evict",
    ),
    (
        "a negative duration",
        None,
        {"readyTimeout": "-5m"},
        "policy.yaml: queue team-a: lifecycle.readyTimeout: '-5m' is negative",
    ),
    (
        "a negative number of seconds",
        {"staleGangGrace": -30},
        None,
        "policy.yaml: lifecycle.staleGangGrace: -30 is negative",
    ),
    (
        "a malformed duration",
        None,
        {"maxRuntime": "3 days"},
        f"policy.yaml: queue team-a: lifecycle.maxRuntime: '3 days' {NOT_A_DURATION}",
    ),
    (
        "a duration with an unknown unit",
        {"requeue": {"backoff": "1w"}},
        None,
        f"policy.yaml: lifecycle.requeue.backoff: '1w' {NOT_A_DURATION}",
    ),
    (
        "a duration that is true",
        {"readyTimeout": True},
        None,
        f"policy.yaml: lifecycle.readyTimeout: True {NOT_A_DURATION}",
    ),
    (
        "a duration over a century",
        {"maxRuntime": "1000000h"},
        None,
        "policy.yaml: lifecycle.maxRuntime: '1000000h' is more than a century",
    ),
    (
        "an idle window of 0",
        {"idleGpu": {"for": "0s"}},
        None,
        "policy.yaml: lifecycle.idleGpu.for: '0s' must be above 0",
    ),
    (
        "below above 100",
        None,
        {"idleGpu": {"below": 120}},
        "policy.yaml: queue team-a: lifecycle.idleGpu.below: 120 must be a percentage, 0 to 100",
    ),
    (
        "below negative",
        {"idleGpu": {"below": -1}},
        None,
        "policy.yaml: lifecycle.idleGpu.below: -1 must be a percentage, 0 to 100",
    ),
    (
        "below written as a fraction where a percent is meant",
        None,
        {"idleGpu": {"below": 0.1}},
        "policy.yaml: queue team-a: lifecycle.idleGpu.below: 0.1 looks like a fraction; below is "
        "a percent (0-100): write 10 for 10%",
    ),
    (
        "below written as a string",
        {"idleGpu": {"below": "5%"}},
        None,
        "policy.yaml: lifecycle.idleGpu.below: '5%' must be a percentage, 0 to 100",
    ),
    (
        "a negative requeue limit",
        None,
        {"requeue": {"limit": -1}},
        "policy.yaml: queue team-a: lifecycle.requeue.limit: -1 must be a whole number >= 0",
    ),
    (
        "a restart limit that is not whole",
        {"restartLimit": 2.5},
        None,
        "policy.yaml: lifecycle.restartLimit: 2.5 must be a whole number >= 0",
    ),
    (
        "maxBackoff below backoff in one section",
        {"requeue": {"backoff": "10m", "maxBackoff": "5m"}},
        None,
        "policy.yaml: lifecycle.requeue.maxBackoff: 5m is below the backoff it caps (10m)",
    ),
    (
        "a queue's backoff above the top level's maxBackoff",
        {"requeue": {"maxBackoff": "30m"}},
        {"requeue": {"backoff": "1h"}},
        "policy.yaml: queue team-a: lifecycle.requeue.maxBackoff: 30m is below the backoff it "
        "caps (1h)",
    ),
]


@pytest.mark.parametrize(
    "top,own,message", [b[1:] for b in BAD], ids=[f"{b[0]} is refused" for b in BAD]
)
def test_a_lifecycle_mistake_is_refused_naming_file_queue_and_field(
    top: Any, own: Any, message: str
) -> None:
    with pytest.raises(PolicyError) as err:
        with_lifecycle(top, queue("team-a", lifecycle=own))
    assert str(err.value).startswith(message)


def test_a_mistake_in_a_child_queue_names_the_child() -> None:
    with pytest.raises(PolicyError, match=r"^policy.yaml: queue vision: lifecycle.maxRuntime: "):
        with_lifecycle(
            {"maxRuntime": "1h"},
            queue("research", lifecycle={"maxRuntime": "2h"}),
            queue("vision", parent="research", lifecycle={"maxRuntime": "forever"}),
        )
