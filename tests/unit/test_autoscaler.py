"""The autoscaler's decision function, as a pure function of observations over time."""

from __future__ import annotations

import datetime as dt

import pytest

from citerun.operator import autoscaler
from citerun.operator.autoscaler import Decision, Observation, State, decide
from citerun.operator.settings import AutoscalerConfig

CONFIG = AutoscalerConfig(min_workers=0, max_workers=10, tasks_per_worker=8,
                          stabilization_s=60, cooldown_s=300)


def obs(now: float, due: int = 0, running: int = 0, busy: int = 0, current: int = 0
        ) -> Observation:
    return Observation(now=now, due=due, running=running, busy_workers=busy, current=current)


class Cluster:
    """Feeds :func:`decide` and applies its decisions, as the run loop does."""

    def __init__(self, config: AutoscalerConfig = CONFIG, replicas: int = 0) -> None:
        self.config = config
        self.state = State()
        self.replicas = replicas

    def tick(self, now: float, due: int = 0, running: int = 0, busy: int = 0) -> Decision:
        decision = decide(obs(now, due, running, busy, self.replicas), self.state, self.config)
        self.replicas = decision.replicas
        return decision


def test_scales_up_on_the_first_observation_of_work() -> None:
    decision = decide(obs(0, due=20), State(), CONFIG)
    assert decision == Decision(3, decision.reason)  # ceil(20 / 8)
    assert decision.label == "scale-up"


def test_scale_up_counts_running_tasks_too() -> None:
    assert decide(obs(0, due=4, running=13, current=1), State(), CONFIG).replicas == 3


def test_scale_up_is_clamped_to_max_workers() -> None:
    assert decide(obs(0, due=10_000), State(), CONFIG).replicas == 10


def test_min_workers_are_kept_when_idle() -> None:
    config = CONFIG.model_copy(update={"min_workers": 2})
    assert decide(obs(0), State(), config) == Decision(2, decide(obs(0), State(), config).reason)
    assert decide(obs(0), State(), config).label == "scale-up"
    cluster = Cluster(config, replicas=2)
    for t in range(0, 2000, 10):
        assert cluster.tick(t).replicas == 2


def test_more_replicas_than_max_are_trimmed_after_stabilization() -> None:
    cluster = Cluster(replicas=15)
    assert cluster.tick(0, due=500).replicas == 15
    assert cluster.tick(59, due=500).label == "stabilizing"
    assert cluster.tick(61, due=500).replicas == 10


def test_a_lower_target_must_hold_for_the_stabilization_window() -> None:
    cluster = Cluster()
    assert cluster.tick(0, due=80).replicas == 10
    assert cluster.tick(1, due=10, running=6).label == "stabilizing"  # needs 2 now
    for t in range(2, 61):
        assert cluster.tick(t, due=10, running=6).replicas == 10
    decision = cluster.tick(62, due=10, running=6)
    assert decision.replicas == 2 and decision.label == "scale-down"


def test_flapping_load_never_scales_down_early() -> None:
    cluster = Cluster()
    for t in range(0, 600, 5):
        high = (t // 5) % 6 == 0  # a burst every 30 s, quiet in between
        decision = cluster.tick(t, due=80 if high else 0, running=0 if high else 8)
        assert decision.replicas == 10, (t, decision)


def test_a_burst_inside_the_window_restarts_it() -> None:
    cluster = Cluster()
    cluster.tick(0, due=80)
    cluster.tick(50, due=8)            # 1 needed from here
    assert cluster.tick(100, due=80).replicas == 10   # burst: the window starts again
    assert cluster.tick(130, due=8).replicas == 10
    assert cluster.tick(159, due=8).replicas == 10
    assert cluster.tick(161, due=8).replicas == 1


def test_scaling_to_zero_waits_for_the_cooldown() -> None:
    cluster = Cluster()
    cluster.tick(0, due=16)
    assert cluster.replicas == 2
    cluster.tick(10)                   # the queue is empty from t=10
    for t in range(11, 310, 7):
        decision = cluster.tick(t)
        assert decision.replicas == 2 and decision.label == "cooldown", (t, decision)
    decision = cluster.tick(311)
    assert decision.replicas == 0 and decision.label == "scale-to-min"


def test_cooldown_restarts_when_work_comes_back() -> None:
    cluster = Cluster()
    cluster.tick(0, due=8)
    cluster.tick(1)                    # idle from t=1
    cluster.tick(200, due=1)           # one task at t=200
    cluster.tick(201)                  # idle again from t=201
    assert cluster.tick(400).replicas == 1
    assert cluster.tick(502).replicas == 0


def test_scaling_to_zero_respects_the_window_when_it_is_longer_than_the_cooldown() -> None:
    config = CONFIG.model_copy(update={"stabilization_s": 60, "cooldown_s": 5})
    cluster = Cluster(config)
    cluster.tick(0, due=80)
    cluster.tick(1)
    assert cluster.tick(30).replicas == 10   # cooled down, but the window still holds 10
    assert cluster.tick(62).replicas == 0


def test_zero_cooldown_and_window_scale_down_at_once() -> None:
    config = CONFIG.model_copy(update={"stabilization_s": 0, "cooldown_s": 0})
    cluster = Cluster(config)
    assert cluster.tick(0, due=80).replicas == 10
    assert cluster.tick(1, due=8).replicas == 1
    assert cluster.tick(2).replicas == 0


def test_never_below_the_busy_workers() -> None:
    cluster = Cluster(replicas=6)
    # 6 tasks, each on its own worker: 1 would do by tasks_per_worker, but 6 are busy.
    for t in range(0, 400, 10):
        assert cluster.tick(t, running=6, busy=6).replicas == 6
    # Capped at max_workers all the same.
    assert decide(obs(0, running=30, busy=30, current=10), State(), CONFIG).replicas == 10


def test_a_stale_busy_count_does_not_hold_workers_when_nothing_runs() -> None:
    # A workers row keeps busy=N until the next idle heartbeat; with no task running no
    # worker can be busy, so the scale to zero is not held up by it.
    cluster = Cluster(replicas=4)
    cluster.tick(0, busy=4)
    assert cluster.tick(301, busy=4).replicas == 0


def test_steady_state_changes_nothing() -> None:
    cluster = Cluster(replicas=3)
    for t in range(0, 1000, 5):
        decision = cluster.tick(t, due=5, running=19)
        assert decision == Decision(3, "steady")


def test_decisions_are_the_same_for_the_same_inputs() -> None:
    inputs = [(t, (t * 37) % 90, (t * 11) % 20) for t in range(0, 900, 3)]
    runs = []
    for _ in range(2):
        cluster = Cluster()
        runs.append([cluster.tick(t, due, running) for t, due, running in inputs])
    assert runs[0] == runs[1]


@pytest.mark.parametrize("micro", [0, 1, 999_999])
def test_lease_times_always_carry_six_fractional_digits(micro: int) -> None:
    moment = dt.datetime(2025, 1, 2, 3, 4, 5, micro, tzinfo=dt.timezone.utc)
    assert autoscaler._micro_time(moment) == f"2025-01-02T03:04:05.{micro:06d}Z"


def test_a_fresh_state_waits_a_whole_window_before_scaling_down() -> None:
    # A new Lease holder knows no history: it must not shrink at once what another
    # replica scaled up a moment ago.
    cluster = Cluster(replicas=10)
    assert cluster.tick(0, due=8).label == "stabilizing"
    assert cluster.tick(59, due=8).replicas == 10
    assert cluster.tick(61, due=8).replicas == 1
