"""GPU use read from a real Prometheus (Debian's package) scraping a dcgm-exporter stand-in every
second, with the metric and labels dcgm-exporter publishes (tests/dcgm_standin.py). One story,
read at its steps (seconds after Prometheus's first sample, a 5 s window):

    0     pods idle (2 %), busy (85 %), multi (two GPUs: 1 % and 70 %), blip (1 %), gone (1 %)
    3-4.5 blip at 60 %
    5.5   pod late appears, pod gone goes
    7.5   read: the window 2.5-7.5 covers idle, busy, multi and blip
    7.5-9.5 the exporter answers 503 (Prometheus marks its series stale)
    12    read over 5 s: the gap is in every pod's window; read over 1 s: all there again
    then  Prometheus stopped: read fails
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from extender.core.model.gpu_use import GpuUse
from extender.observe.gpu_use import GpuUseReader
from loadtest import live
from tests.dcgm_standin import DcgmStandin, first_sample

pytestmark = [
    pytest.mark.skipif(
        live.PROMETHEUS is None,
        reason="prometheus not installed (Debian package prometheus; `make prometheus` installs "
        "it as root)",
    ),
    pytest.mark.slow,
]
WINDOW = 5.0


@dataclass(frozen=True)
class Story:
    covered: GpuUse  # at 7.5
    other_labels: GpuUse  # at 7.5, asking for labels the exporter does not have
    after_gap: GpuUse  # at 12
    short_after_gap: GpuUse  # at 12, over 1 s
    stopped: GpuUse


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Story]:
    def at(offset: float) -> None:
        time.sleep(max(0.0, first + offset - time.time()))

    with DcgmStandin() as exporter:
        exporter.set("ml", "idle", 2)
        exporter.set("ml", "busy", 85)
        exporter.set("ml", "multi", 1, 70)
        exporter.set("ml", "blip", 1)
        exporter.set("ml", "gone", 1)
        workdir = tmp_path_factory.mktemp("prometheus")
        with live.prometheus(exporter.target, workdir, interval="1s") as url:
            reader = GpuUseReader(url)
            first = first_sample(url, "idle")
            at(3.0)
            exporter.set("ml", "blip", 60)
            at(4.5)
            exporter.set("ml", "blip", 1)
            at(5.5)
            exporter.set("ml", "late", 1)
            exporter.remove("ml", "gone")
            at(7.5)
            covered = reader.read(WINDOW, time.time())
            other = GpuUseReader(
                url, namespace_label="exported_namespace", pod_label="exported_pod"
            )
            other_labels = other.read(WINDOW, time.time())
            exporter.failing = True
            at(9.5)
            exporter.failing = False
            at(12.0)
            now = time.time()
            after_gap, short_after_gap = reader.read(WINDOW, now), reader.read(1.0, now)
        stopped = reader.read(WINDOW, time.time())
    yield Story(covered, other_labels, after_gap, short_after_gap, stopped)


def test_an_idle_pod_reads_below_5_percent_and_a_busy_one_above(story: Story) -> None:
    assert story.covered.ok and story.covered.window == WINDOW
    assert story.covered.busiest[("ml", "idle")] == 2.0 < 5
    assert story.covered.busiest[("ml", "busy")] == 85.0 > 5


def test_a_pod_with_several_gpus_reads_as_its_busiest_gpu(story: Story) -> None:
    assert story.covered.busiest[("ml", "multi")] == 70.0


def test_a_pod_busy_for_a_moment_of_the_window_reads_as_busy(story: Story) -> None:
    assert story.covered.busiest[("ml", "blip")] == 60.0


def test_pods_whose_series_began_or_ended_within_the_window_and_gpus_of_no_pod_are_left_out(
    story: Story,
) -> None:
    assert set(story.covered.busiest) == {("ml", p) for p in ("idle", "busy", "multi", "blip")}


def test_labels_the_exporter_does_not_have_find_no_pod_and_are_no_error(story: Story) -> None:
    assert story.other_labels == GpuUse({}, window=WINDOW)


def test_an_exporter_down_within_the_window_leaves_every_pod_out_until_a_window_is_whole_again(
    story: Story,
) -> None:
    assert story.after_gap == GpuUse({}, window=WINDOW)
    assert story.short_after_gap.busiest == {
        ("ml", "idle"): 2.0,
        ("ml", "busy"): 85.0,
        ("ml", "multi"): 70.0,
        ("ml", "blip"): 1.0,
        ("ml", "late"): 1.0,
    }


def test_with_prometheus_stopped_the_read_is_not_ok_and_says_why(story: Story) -> None:
    assert (story.stopped.ok, story.stopped.busiest) == (False, {})
    assert "not reachable" in story.stopped.problem and "refused" in story.stopped.problem
