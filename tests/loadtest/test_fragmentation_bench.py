"""The trace comparison runs every policy on a trace laid out as the public one (a small one made
here: the real trace is not part of the repository) and says so when the trace is absent."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadtest import fragmentation

NODES = ["sn,cpu_milli,memory_mib,gpu,model"] + [
    f"node-{i},64000,262144,{gpus},{model}"
    for i, (gpus, model) in enumerate([(8, "V100"), (8, "V100"), (4, "T4"), (2, "T4"), (0, "")])
]
PODS = ["name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,creation_time"] + [
    f"pod-{i},{cpu},{mem},{gpus},{milli},{spec},{i}"
    for i, (cpu, mem, gpus, milli, spec) in enumerate(
        [(4000, 16384, 1, 500, ""), (8000, 32768, 2, 1000, ""), (2000, 4096, 0, 0, "")] * 3
        + [(4000, 16384, 1, 1000, "T4"), (16000, 65536, 8, 1000, "V100")]
    )
]


@pytest.fixture
def traces(tmp_path: Path) -> Path:
    root = tmp_path / fragmentation.TRACE
    root.mkdir()
    (root / "openb_node_list_all_node.csv").write_text("\n".join(NODES) + "\n")
    for name in fragmentation.LISTS:
        (root / f"openb_pod_list_{name}.csv").write_text("\n".join(PODS) + "\n")
    return tmp_path


GPUS = 22  # 8 + 8 + 4 + 2
# Seeded: each policy's GPUs allocated when its first pod failed, and unallocated at 100% load
# (half GPUs: the trace's shared pods take 500 milli-GPUs).
EXPECTED = {
    "random": (19.5, 2.5),
    "bestfit": (21.5, 0.5),
    "dotprod": (8.5, 6.5),
    "gpupacking": (21.5, 0.5),
    "gpuclustering": (8.5, 6.5),
    "fgd": (7.5, 0.5),
    "gangplank": (7.5, 0.5),
    "gangplank+default": (7.5, 0.5),
    "gangplank+consolidation": (7.5, 0.5),  # no plan makes room here: no move
}


def test_every_policy_places_the_trace_and_gpu_shares_are_counted_per_gpu(traces: Path) -> None:
    assert set(EXPECTED) == set(fragmentation.POLICIES)
    for policy, (at_first_failure, unallocated) in EXPECTED.items():
        result = fragmentation.simulate(traces, "default", policy, seed=1)
        assert result.first_failure_share == pytest.approx(at_first_failure / GPUS), policy
        assert result.unallocated_at_full == pytest.approx(unallocated), policy
        assert result.curve and result.ms_per_pod > 0


def test_the_comparison_prints_a_table_with_every_policy_and_plots_it(
    traces: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    png = tmp_path / "plot.png"
    args = ["--traces", str(traces), "--lists", "default,gpuspec33", "--png", str(png)]
    assert fragmentation.main(args) == 0
    out = capsys.readouterr().out
    for policy in fragmentation.POLICIES:
        assert f"| {policy} |" in out
    assert "gpuspec33: unallocated GPUs at 100% load: gangplank" in out
    assert png.stat().st_size > 10_000


def test_without_the_trace_it_says_so_and_skips(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert fragmentation.main(["--traces", str(tmp_path / "nowhere")]) == 0
    assert "is not at" in capsys.readouterr().out
