"""The in-flight ledger (`core/queues/ledger.py`): what a queue admitted that the cache does not
count yet, the admitted pods a bind hands over, and each job's admission counted once."""

from __future__ import annotations

from extender.core.model.resources import GPU
from extender.core.queues.ledger import FORGET_SECONDS, IN_FLIGHT_SECONDS, Ledger
from extender.kube.convert import pod_from_api
from tests.builders import gang_pods, pod

SOLO = pod_from_api(pod("solo", gpu=2))
SOLO_KEY = "pod:default/solo"
GANG = "gangplank:default/g"
MEMBERS = [pod_from_api(p) for p in gang_pods("g", 2, gpu=8)]


def test_a_pod_alone_counts_against_its_queue_while_in_flight() -> None:
    ledger = Ledger()
    ledger.admit(SOLO_KEY, SOLO, "q", 0.0, planned=False)
    reserved, busy = ledger.reserved({})
    assert reserved["q"][GPU] == 2 and busy == {SOLO_KEY}
    ledger.prune(IN_FLIGHT_SECONDS, plans=())
    assert ledger.reserved({})[0]["q"][GPU] == 2, "still in flight"
    ledger.prune(IN_FLIGHT_SECONDS + 1, plans=())
    assert ledger.reserved({}) == ({}, set()), "it did not bind in time: counted no more"


def test_a_pod_asked_about_again_is_in_flight_no_more() -> None:
    ledger = Ledger()
    ledger.admit(SOLO_KEY, SOLO, "q", 0.0, planned=False)
    ledger.asked_again(SOLO.uid)
    assert ledger.reserved({}) == ({}, set())


def test_a_plans_amounts_count_against_the_queue_of_its_job() -> None:
    ledger = Ledger()
    amounts = {GANG: {GPU: 16}, "gangplank:default/other": {GPU: 8}}
    ledger.admit(GANG, MEMBERS[0], "q", 0.0, planned=True)
    reserved, busy = ledger.reserved(amounts)
    assert reserved == {"q": {GPU: 16}}, "a plan of no known queue is not counted"
    assert busy == {GANG, "gangplank:default/other"}
    ledger.plan_queue("gangplank:default/other", "r")
    assert ledger.reserved(amounts)[0] == {"q": {GPU: 16}, "r": {GPU: 8}}


def test_a_gang_member_admitted_without_a_plan_is_not_in_flight() -> None:
    ledger = Ledger()
    ledger.admit(GANG, MEMBERS[0], "q", 0.0, planned=False)
    assert ledger.reserved({}) == ({}, set())


def test_a_bind_hands_back_the_admitted_pod_once() -> None:
    ledger = Ledger()
    ledger.admit(SOLO_KEY, SOLO, "q", 0.0, planned=False)
    ledger.admit(GANG, MEMBERS[0], None, 0.0, planned=True)
    assert ledger.bound(SOLO.uid) is SOLO
    assert ledger.reserved({}) == ({}, set()), "bound: the cache counts it now"
    assert ledger.bound(MEMBERS[0].uid) is MEMBERS[0], "a planned member, admitted as such"
    assert ledger.bound(MEMBERS[0].uid) is None and ledger.bound(MEMBERS[1].uid) is None


def test_a_jobs_admission_is_counted_once_with_how_long_it_waited() -> None:
    ledger = Ledger()
    ledger.count(GANG, "q", created=10.0, now=40.0)
    ledger.count(GANG, "q", created=10.0, now=41.0)
    ledger.refused("q", "max")
    outcomes = ledger.take_outcomes()
    assert outcomes.admitted == {"q": 1} and outcomes.waits == [("q", 30.0)]
    assert outcomes.refused == {("q", "max"): 1}
    assert ledger.take_outcomes().admitted == {}, "taken: counted anew"


def test_prune_forgets_old_admissions_and_the_queues_of_plans_gone() -> None:
    ledger = Ledger()
    ledger.count(GANG, "q", created=0.0, now=0.0)
    assert ledger.take_outcomes().admitted == {"q": 1}
    ledger.admit(GANG, MEMBERS[0], "q", 0.0, planned=True)
    ledger.prune(FORGET_SECONDS, plans={GANG})
    assert ledger.reserved({GANG: {GPU: 8}})[0] == {"q": {GPU: 8}}
    ledger.count(GANG, "q", created=0.0, now=FORGET_SECONDS)
    assert ledger.take_outcomes().admitted == {}, "not forgotten yet"
    ledger.prune(FORGET_SECONDS + 1, plans=())
    assert ledger.reserved({GANG: {GPU: 8}})[0] == {}, "its plan is gone"
    assert ledger.bound(MEMBERS[0].uid) is None, "never bound: forgotten"
    ledger.count(GANG, "q", created=0.0, now=FORGET_SECONDS + 1)
    assert ledger.take_outcomes().admitted == {"q": 1}, "a job admitted anew counts again"
