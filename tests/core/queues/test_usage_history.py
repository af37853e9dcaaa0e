"""Usage history: decayed resource-seconds per queue, bounded by the window, kept on restart."""

from __future__ import annotations

import math
from typing import Any

import orjson
import pytest

from extender.core.queues.usage_history import UsageHistory

DAY = 86400.0
GPU = "nvidia.com/gpu"


def run(
    history: UsageHistory, gpus: int, hours: int, start: float = 0.0, step: float = 3600.0
) -> float:
    now = start
    history.sample(now, {"a": {GPU: gpus}})
    for _ in range(int(hours * 3600.0 / step)):
        now += step
        history.sample(now, {"a": {GPU: gpus}})
    return now


@pytest.mark.parametrize(
    ("step", "start"),
    [(3600.0, 0.0), (60.0, 0.0), (1800.0, 1000.0), (600.0, 1.8e9)],
    ids=[
        "sampled on the hour",
        "sampled every minute",
        "sampled off the hour boundaries",
        "sampled at today's clock (seconds since 1970)",
    ],
)
def test_an_hour_of_eight_gpus_is_eight_gpu_hours_before_decay_counts(
    step: float, start: float
) -> None:
    history = UsageHistory(half_life=1e12, window=7 * DAY)
    now = run(history, 8, 2, start=start, step=step)
    assert history.decayed(now)["a"][GPU] == pytest.approx(8 * 3600.0 * 2, rel=1e-6)


@pytest.mark.parametrize(
    ("later", "fraction"),
    [(DAY, 0.5), (2 * DAY, 0.25), (1800.0, 0.5 ** (1 / 48))],
    ids=[
        "a day later at a half-life of a day, half of it counts",
        "two days later, a quarter",
        "half an hour later, a 48th of a halving (the bucket does not round the age)",
    ],
)
def test_usage_halves_every_half_life(later: float, fraction: float) -> None:
    history = UsageHistory(half_life=DAY, window=7 * DAY)
    now = run(history, 1, 1)
    first = history.decayed(now)["a"][GPU]
    assert history.decayed(now + later)["a"][GPU] == pytest.approx(first * fraction)


def test_a_queue_that_always_held_eight_gpus_averages_eight() -> None:
    history = UsageHistory(half_life=3600.0, window=7 * DAY)
    now = run(history, 8, 48, step=600.0)
    assert history.average(now)["a"][GPU] == pytest.approx(8.0, rel=1e-3)
    assert history.decayed(now)["a"][GPU] == pytest.approx(8 * 3600.0 / math.log(2), rel=1e-3)


def test_usage_older_than_the_window_is_forgotten() -> None:
    history = UsageHistory(half_life=DAY, window=DAY)
    now = run(history, 4, 2)
    history.sample(now + 3 * DAY, {})
    assert history.decayed(now + 3 * DAY) == {}


def test_a_pause_longer_than_a_bucket_counts_one_bucket_of_use_not_the_whole_gap() -> None:
    history = UsageHistory(half_life=1e12, window=7 * DAY)
    history.sample(0.0, {})
    history.sample(10 * 3600.0, {"a": {GPU: 2}})
    assert history.decayed(10 * 3600.0)["a"][GPU] == pytest.approx(2 * 3600.0)


def test_a_new_half_life_applies_to_the_usage_already_kept_from_its_bucket_start() -> None:
    history = UsageHistory(half_life=1e12, window=7 * DAY)
    now = run(history, 1, 1)
    history.set_rates(3600.0, 7 * DAY)
    assert history.decayed(now + 3600.0)["a"][GPU] == pytest.approx(3600.0 * 0.25)


def test_asked_about_a_time_before_its_samples_it_answers_them_undecayed() -> None:
    history = UsageHistory(half_life=DAY, window=7 * DAY)
    now = run(history, 1, 1, start=1.8e9)
    assert history.decayed(0.0)["a"][GPU] == pytest.approx(3600.0, rel=0.05)
    assert now > 0


def test_a_half_life_of_zero_keeps_no_history() -> None:
    history = UsageHistory(half_life=0, window=7 * DAY)
    now = run(history, 4, 3)
    assert history.decayed(now) == {}
    assert history.average(now) == {}


def test_the_record_written_to_the_cluster_reads_back_the_same_history() -> None:
    history = UsageHistory(half_life=DAY, window=7 * DAY)
    now = run(history, 4, 5, step=900.0)
    again = UsageHistory(half_life=DAY, window=7 * DAY)
    again.restore(orjson.loads(orjson.dumps(history.to_record())))
    assert again.decayed(now)["a"][GPU] == pytest.approx(history.decayed(now)["a"][GPU], rel=1e-5)


def test_a_record_too_large_for_a_configmap_merges_buckets_and_keeps_the_decayed_usage() -> None:
    history = UsageHistory(half_life=DAY, window=7 * DAY)
    now = 0.0
    history.sample(now, {})
    for _ in range(7 * 24):
        now += 3600.0
        history.sample(now, {f"team-{i}": {GPU: 8, "cpu": 64} for i in range(100)})
    small = history.to_record(limit=60_000)
    assert small["bucketSeconds"] > 3600.0
    again = UsageHistory(half_life=DAY, window=7 * DAY)
    again.restore(small)
    for queue in ("team-0", "team-99"):
        assert again.decayed(now)[queue][GPU] == pytest.approx(history.decayed(now)[queue][GPU])


RECORD = {"version": 1, "bucketSeconds": 3600, "resources": [GPU], "buckets": {}}


@pytest.mark.parametrize(
    "record",
    [
        {},
        {**RECORD, "version": 2},
        {**RECORD, "bucketSeconds": 60},
        {**RECORD, "buckets": {"x": {}}},
        {**RECORD, "buckets": {"1800": {}}},
        {**RECORD, "buckets": {"3600": {"a": [1.0, 2.0]}}},
    ],
    ids=[
        "an empty record",
        "a later version",
        "buckets shorter than an hour",
        "a bucket that is not a time",
        "a bucket off its boundary",
        "more amounts than resources",
    ],
)
def test_a_record_that_is_not_a_history_is_refused_with_the_reason(record: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="not a usage history record"):
        UsageHistory(half_life=DAY, window=DAY).restore(record)
