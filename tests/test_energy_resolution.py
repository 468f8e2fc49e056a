"""An energy counter that moves in steps (NVML's moves by about 12 J): windows too short for it
are measured together as one longer window or said to be below its resolution, never read as
0 J (gpulesson.machine.energy, gpulesson.records.energy). A made-up counter with its own clock stands
in for the GPU's."""

import math

import pytest

from gpulesson.machine import energy
from gpulesson.records import energy as kept

WATTS, STEP = 300.0, 12.0


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class SteppedCounter(energy.EnergyMeter):
    """A device using ``WATTS`` whose counter shows the joules in whole steps of ``STEP``."""

    source = "test counter"

    def __init__(self, clock):
        self.clock = clock
        super().__init__(poll=3600.0, clock=clock)  # its thread never polls: the test does

    def read(self):
        return math.floor(WATTS * self.clock.now / STEP) * STEP

    def _advance(self, before, after, seconds):
        return after - before


def run_for(meter, seconds, poll=energy.POLL_SECONDS):
    """Let ``seconds`` pass, the meter's thread reading it every ``poll`` seconds."""
    end = meter.clock.now + seconds
    while meter.clock.now + poll < end:
        meter.clock.now += poll
        meter.update()
    meter.clock.now = end


def epochs(seconds, count=6):
    """A training of ``count`` epochs of ``seconds`` each, read around every epoch."""
    meter = SteppedCounter(Clock())
    intervals = energy.Intervals(meter)
    for _ in range(count):
        intervals.begin()
        run_for(meter, seconds)
        intervals.end()
    return intervals


def test_the_counter_counts_its_changes_and_its_step():
    meter = SteppedCounter(Clock())
    run_for(meter, 1.0)
    meter.update()
    assert meter.changes >= 9 and meter.step_joules == STEP
    assert meter.update() == pytest.approx(WATTS * 1.0, abs=STEP)


def test_long_epochs_are_measured_one_by_one():
    found = kept.stop_intervals(epochs(2.0), None, warmup=1, images=1000)
    assert found["measured"] and found["window"] == "each"
    assert all(c >= energy.MIN_CHANGES for c in found["changes"][1:])
    assert found["summary"]["samples"] == pytest.approx([600.0] * 5, abs=STEP)
    assert found["step_joules"] == STEP


def test_short_epochs_are_measured_as_one_window_of_the_timed_phase():
    """Epochs of 0.33 s (the CNN on an H200): each too short for the counter, the 5 timed ones
    together long enough. No epoch is read as 0 J."""
    found = kept.stop_intervals(epochs(0.33), None, warmup=1, images=45_000)
    assert found["measured"] and found["window"] == "phase" and found["intervals"] == 5
    assert found["changes"] >= energy.MIN_CHANGES
    assert found["joules"] == pytest.approx(WATTS * 5 * 0.33, abs=STEP)
    assert found["summary"]["samples"] == [pytest.approx(found["joules"] / 5)]
    record = {"energy": found}
    per_image = kept.energy_summary(record, per_image=True)["median"]
    assert per_image == pytest.approx(WATTS * 0.33 / 45_000, rel=0.1) and per_image > 0
    text = kept.energy_text(record)
    assert "the mean of 5 epochs, measured as one window of" in text
    assert "one epoch alone is too short for the meter" in text
    assert kept.energy_text(record, per_image=True, what="calls").startswith(
        f"{kept._joules(per_image)} (the mean of 5 calls")


def test_a_phase_too_short_for_the_counter_is_said_to_be_below_its_resolution():
    """Calls of 20 ms (prediction on an H200): 5 of them make 30 J, two or three steps."""
    found = kept.stop_intervals(epochs(0.02), None, warmup=1, images=1024)
    assert not found["measured"] and found["below_resolution"]
    assert "summary" not in found  # no number of joules is claimed
    assert f"{STEP:.3g} J a step" in found["reason"]
    assert f"at least {energy.MIN_CHANGES} changes" in found["reason"]
    text = kept.energy_text({"energy": found}, per_image=True)
    assert text.startswith(kept.BELOW_RESOLUTION) and "0 J" not in text.split("(")[0]
    assert kept.energy_summary({"energy": found}) is None


def test_the_old_per_interval_reading_gave_zero_joules():
    """Why: read one by one, most 20 ms intervals see no step of the counter."""
    intervals = epochs(0.02)
    assert 0.0 in intervals.joules[1:]


def test_calls_are_repeated_in_one_window_until_the_counter_has_moved_enough():
    meter = SteppedCounter(Clock())
    calls = []

    def predict():
        calls.append(1)
        run_for(meter, 0.02, poll=0.01)

    found = kept.energy_of_calls(predict, "gpu", images=1024, meter=meter)
    assert found["measured"] and found["window"] == "phase"
    assert found["intervals"] == len(calls) and found["changes"] >= energy.MIN_CHANGES
    assert found["joules"] == pytest.approx(WATTS * 0.02 * len(calls), abs=STEP)
    per_image = kept.energy_summary({"energy": found}, per_image=True)["median"]
    assert per_image == pytest.approx(WATTS * 0.02 / 1024, rel=0.15)


def test_calls_that_never_move_the_counter_stop_and_say_so():
    meter = SteppedCounter(Clock())  # its clock never moves: no step
    found = kept.energy_of_calls(lambda: None, "gpu", images=1, meter=meter, max_seconds=0.05)
    assert not found["measured"] and found["below_resolution"] and found["changes"] == 0
    assert "call(s) lasted" in found["reason"]


@pytest.mark.bad_input("no energy counter")
def test_calls_without_a_meter_keep_the_reason(tmp_path):
    found = kept.energy_of_calls(lambda: None, "cpu", images=1, powercap=tmp_path)
    assert found == {"measured": False, "reason": found["reason"]}
    assert "no CPU energy counters" in found["reason"]


@pytest.mark.bad_input("bad argument")
def test_a_window_needs_an_interval():
    with pytest.raises(ValueError, match="no interval"):
        energy.Intervals(SteppedCounter(Clock())).window()


def test_an_older_record_with_intervals_of_0_j_is_shown_as_below_the_resolution():
    """The first H200 records read 20 ms calls one by one: 0, 0, 12.7, 0 and 0 J."""
    old = {"energy": {"measured": True, "source": "NVML total energy counter", "images": 1024,
                      "summary": {"unit": "J", "n": 5, "median": 0.0, "min": 0.0, "max": 12.7,
                                  "samples": [0.0, 0.0, 12.7, 0.0, 0.0], "warmup": [211.0]}}}
    assert kept.energy_summary(old, per_image=True) is None
    text = kept.energy_text(old, per_image=True, what="calls")
    assert text.startswith(kept.BELOW_RESOLUTION) and "0 J" in text and "shorter" in text
    # an older record of long intervals is read as before
    fine = {"energy": kept.measured("x", [50.0, 40.0, 44.0], warmup=1, images=10)}
    assert kept.energy_summary(fine)["median"] == 42.0
