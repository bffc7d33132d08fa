import pytest

from snowplow_assets.phase_times import PhaseTimes


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_an_inner_phase_is_taken_out_of_the_outer_one_and_a_repeated_phase_adds_up():
    clock = Clock()
    phases = PhaseTimes(clock)
    with phases.phase("decisions"):
        clock.now += 2
        with phases.phase("event_manifest"):
            clock.now += 5
        clock.now += 1
    clock.now += 100  # between phases: nobody's time
    with phases.phase("decisions"):
        clock.now += 3
    assert phases.seconds == {"decisions": 6, "event_manifest": 5}


def test_a_phase_that_raises_is_still_timed():
    clock = Clock()
    phases = PhaseTimes(clock)
    with pytest.raises(RuntimeError), phases.phase("output"):
        clock.now += 4
        raise RuntimeError("write failed")
    with phases.phase("publish"):
        clock.now += 1
    assert phases.seconds == {"output": 4, "publish": 1}
