"""Gang start: a gang's time to whole and gang throughput, through the simulator's kube-scheduler
model and through the HTTP stand-in against `gangplank serve`, each printed beside kube-scheduler's
own figure from the issue and written between their markers."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadtest.gang_start import SHAPES, main


def test_the_shapes_interleave_the_gangs_members_as_a_controller_creates_two_jobs() -> None:
    shape = next(s for s in SHAPES if s.name == "#3373, 8 members")
    gangs = [p["metadata"]["labels"]["gangplank.io/gang"] for p in shape.pods()]
    assert gangs[:4] == ["g0", "g1", "g0", "g1"] and len(gangs) == 16


@pytest.mark.slow  # the model's runs take 10-25 s: `make test-slow` (and CI) run them
@pytest.mark.parametrize(
    ("only", "expected"),
    [
        (
            "#3373, 8 members",
            "#3373, 8 members, sim --no-bind-planned-members: first gang whole 0.070 s (simulated)",
        ),
        (
            "50 gangs",
            "50 gangs of 8, sim --no-bind-planned-members: 201 pods/s "
            "(400 pods in 1.99 s, simulated)",
        ),
    ],
    ids=[
        "the first of two interleaved gangs is whole after one cycle for each pod of both",
        "fifty gangs waiting drain at the model's pace, one pod a cycle",
    ],
)
def test_the_simulated_driver_times_a_gang_and_says_where_its_seconds_went(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], only: str, expected: str
) -> None:
    page = tmp_path / "benchmarks.md"
    page.write_text("# Benchmarks\n\nkept\n")
    assert main(["--drivers", "sim-one-by-one", "--only", only, "--write", str(page)]) == 0
    out = capsys.readouterr().out
    assert expected in out
    assert "kube-scheduler 1.36's own gangs, real cluster (issue 36)" in out
    assert "own cycles" in out and "the active queue" in out
    text = page.read_text()
    assert "kept" in text and "<!-- gang-start:begin -->" in text and expected in text


@pytest.mark.slow  # starts gangplank serve: run by `make test-slow` (and CI)
def test_the_http_driver_times_a_gang_through_gangplank_serve(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--drivers", "http-one-by-one", "--only", "#3373, 8 members"]) == 0
    out = capsys.readouterr().out
    assert "#3373, 8 members, http --no-bind-planned-members: first gang whole " in out
    assert "in gangplank's verbs (filter " in out and "bind 8 calls" in out


@pytest.mark.slow
def test_in_the_model_gangplank_binding_the_planned_members_takes_the_gang_out_of_the_queue(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`sim` (gangplank's default): once the first member's filter plans the gang, its other
    members are bound by gangplank (batches of Bindings), not each in its turn of kube-scheduler's
    queue (`sim-one-by-one`)."""
    assert main(["--drivers", "sim-one-by-one,sim", "--only", "100 members"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if "first gang whole" in line]
    queued, planned = (float(line.split("whole ")[1].split(" s")[0]) for line in lines)
    assert "members, sim: first gang whole" in lines[1] and "(simulated)" in lines[1]
    cycles = int(lines[1].split("), ")[1].split(" scheduling")[0])
    assert cycles < 100, "the members bound by gangplank take no cycle of their own"
    assert planned < queued / 10
