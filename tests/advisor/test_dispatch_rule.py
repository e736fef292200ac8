"""The host_dispatch rule on generated profiles, with the dispatch path of
analysis/dispatch.py as its evidence: where it must fire (the planted host stalls) and where
it must not (a clean profile, stalls under the gap threshold, too little stalled time, no
task queue). Expected numbers come from the generator's knobs, not from the rule."""
from __future__ import annotations

import pytest

from tb_plugin.advisor import thresholds as th
from tb_plugin.advisor.engine import advise_profile

from .planted import planted

STALL_US = 1500


def run(profile, **overrides):
    res = advise_profile(profile, th.load(overrides), "w", "s")
    found = [f for f in res["findings"] if f["rule"] == "host_dispatch"]
    status = next(r for r in res["rules"] if r["rule"] == "host_dispatch")
    return found, status


@pytest.fixture(scope="module")
def stalled(tmp_path_factory):
    return planted(tmp_path_factory.mktemp("stalled"), dispatch_stall_us=STALL_US)[1]


def test_fires_with_the_dispatch_numbers_as_evidence(stalled):
    (f,), status = run(stalled)
    assert status["applies"] and status["fired"] == 1
    ev = f["evidence"]
    # every third forward/backward launching op stalls 1.5 ms on the host (38 in 3 steps)
    assert 35 <= ev["gap_count"] <= 38 and STALL_US <= ev["worst_gap_us"] < STALL_US * 1.1
    assert ev["worst_gap_before"].startswith("Dequeue@") and ev["worst_gap_after"].startswith("Dequeue@")
    # the device waits for the host: almost all of its idle time precedes the next launch,
    # and a task starts within the generator's 15-30 µs of its launch when the queue is empty
    assert ev["dispatch_bound_idle_pct"] > 80
    assert ev["dispatch_bound_idle_per_step_us"] > 0.8 * ev["gap_per_step_us"]
    assert 15 <= ev["launch_delay_p50_us"] <= 30
    assert ev["launch_delay_p95_us"] >= ev["launch_delay_p50_us"]
    assert f["impact_us"] <= ev["dispatch_bound_idle_per_step_us"] + 1e-6
    assert f["impact_us"] <= ev["gap_per_step_us"] + 1e-6
    views = [lk["view"] for lk in f["links"]]
    assert views == ["trace", "dispatch", "overview"]
    trace = f["links"][0]["params"]
    assert trace["start_us"] < ev["worst_gap_start_us"] < ev["worst_gap_end_us"] < trace["end_us"]


def test_stalls_below_the_gap_threshold_are_still_found_by_the_idle_device(stalled):
    # no gap counts as a stall, but the device still idles before each late launch while
    # the queue runs dry: the main thread is named, not the task-queue thread
    (f,), status = run(stalled, dispatch_gap_us=STALL_US * 2)
    assert f["id"].endswith(":enqueue_bound") and f["evidence"]["dequeue_gap_count"] == 0
    assert f["evidence"]["queue_wait_p50_us"] < th.DEFAULTS["dispatch_queue_backlog_us"]
    found, _ = run(stalled, dispatch_gap_us=STALL_US * 2, dispatch_bound_idle_pct=99)
    assert found == []


def test_does_not_fire_when_stalls_are_a_small_share_of_the_step(stalled):
    found, status = run(stalled, dispatch_min_gap_pct=95, dispatch_bound_idle_pct=99)
    assert found == [] and status["applies"]


def test_does_not_fire_on_a_clean_profile(tmp_path):
    found, status = run(planted(tmp_path)[1])
    assert found == [] and status["applies"]


def test_not_applicable_without_a_task_queue(tmp_path):
    found, status = run(planted(tmp_path, task_queue=False)[1])
    assert found == [] and not status["applies"]
    assert "no task-queue Dequeue events" in status["why_not"]


def test_fires_launch_bound_when_the_task_queue_thread_is_slow(tmp_path):
    # every CANN launch takes 150 µs more: the queue backs up, Dequeue events follow each
    # other without gaps, and the device still waits for launches
    _, p = planted(tmp_path, launch_slow_us=150)
    (f,), status = run(p)
    ev = f["evidence"]
    assert f["id"].endswith(":launch_bound") and ev["dequeue_gap_count"] == 0
    assert ev["dispatch_bound_idle_pct_of_step"] >= th.DEFAULTS["dispatch_bound_idle_pct"]
    assert ev["queue_wait_p95_us"] > 1000  # ops wait milliseconds in the queue
    assert [lk["view"] for lk in f["links"]] == ["trace", "dispatch", "overview"]
    # not with a threshold above what the device idled
    found, _ = run(p, dispatch_bound_idle_pct=ev["dispatch_bound_idle_pct_of_step"] + 1)
    assert found == []
