"""Which pods are gangplank's business (`core/model/workload.py`): the labels and annotations
of the README's "Label a workload" table, and the queue label a pod is counted under."""

from __future__ import annotations

from extender.core.model.workload import is_managed, queue_key, queue_label
from tests.builders import pod_info


def test_every_label_source_of_the_design_table_makes_a_pod_managed() -> None:
    for labels in (
        {"gangplank.io/gang": "g"},
        {"scheduling.x-k8s.io/pod-group": "g"},
        {"kueue.x-k8s.io/pod-group-name": "g"},
        {"kueue.x-k8s.io/queue-name": "q"},
        {"volcano.sh/queue-name": "q"},
        {"yunikorn.apache.org/queue": "q"},
    ):
        assert is_managed(pod_info(labels=labels)), labels
    assert is_managed(pod_info(annotations={"scheduling.k8s.io/group-name": "pg"}))
    assert not is_managed(pod_info(labels={"app": "web"}))


def test_the_first_queue_label_of_the_table_names_the_queue() -> None:
    both = pod_info(
        namespace="ml",
        labels={"volcano.sh/queue-name": "v", "gangplank.io/queue": "g", "app": "x"},
    )
    assert queue_label(both) == ("gangplank.io/queue", "g")
    assert queue_key(both) == ("g", "ml")
    assert queue_label(pod_info(labels={"gangplank.io/queue": ""})) == ("", "")
    assert queue_key(pod_info(namespace="web")) == ("", "web")
