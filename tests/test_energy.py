"""Energy meters (gpulesson.machine.energy) and what records and pages keep of them
(gpulesson.records.energy): integration, counter wrap-around, a fake powercap tree, NVML
stand-ins, and the path where no counter can be read."""

from pathlib import Path

import pytest

from gpulesson.machine import energy
from gpulesson.records import energy as kept

# --- integration of power samples ---------------------------------------------------------------

def test_constant_power_integrates_to_power_times_time():
    assert energy.integrate([0.0, 0.5, 2.0], [100.0, 100.0, 100.0]) == pytest.approx(200.0)


def test_a_ramp_integrates_to_its_mean_power_times_time():
    # 0 W rising to 300 W over 3 s, sampled unevenly: the trapezoids are exact on a line.
    times = [0.0, 0.2, 1.7, 3.0]
    watts = [100.0 * t for t in times]
    assert energy.integrate(times, watts) == pytest.approx(450.0)


def test_a_power_step_counts_each_trapezoid():
    assert energy.integrate([0, 1, 2], [50, 150, 150]) == pytest.approx(100 + 150)


@pytest.mark.bad_input("bad argument")
@pytest.mark.parametrize("times, watts, message", [
    ([0.0], [10.0], "at least two"),
    ([0.0, 1.0], [10.0], "one time for each sample"),
    ([1.0, 0.5], [10.0, 10.0], "must not go backwards"),
    ([0.0, 1.0], [10.0, -1.0], "negative"),
])
def test_samples_that_cannot_be_integrated_are_refused(times, watts, message):
    with pytest.raises(ValueError, match=message):
        energy.integrate(times, watts)


# --- counters that wrap around ------------------------------------------------------------------

def test_counter_delta_without_and_with_a_wrap():
    assert energy.counter_delta(100, 350, 1000) == 250
    assert energy.counter_delta(900, 150, 1000) == 250
    assert energy.counter_delta(500, 500, 1000) == 0


@pytest.mark.bad_input("corrupt file")
def test_a_reading_outside_the_range_is_refused():
    with pytest.raises(ValueError, match="outside the counter's range"):
        energy.counter_delta(100, 1200, 1000)
    with pytest.raises(ValueError, match="must be positive"):
        energy.counter_delta(0, 1, 0)


def _zone(root: Path, name: str, uj: int, max_uj: int) -> Path:
    zone = root / name
    zone.mkdir(parents=True)
    (zone / "name").write_text(f"package-{name[-1]}\n")
    (zone / "energy_uj").write_text(f"{uj}\n")
    (zone / "max_energy_range_uj").write_text(f"{max_uj}\n")
    return zone


@pytest.fixture
def powercap(tmp_path) -> Path:
    """Two packages and a sub-zone (which the package counts already, so it is left out)."""
    _zone(tmp_path, "intel-rapl:0", 1_000_000, 10_000_000)
    _zone(tmp_path, "intel-rapl:1", 9_500_000, 10_000_000)
    _zone(tmp_path, "intel-rapl:0:0", 0, 10_000_000)
    return tmp_path


def test_the_packages_of_a_powercap_tree_are_found(powercap):
    assert [z.name for z in energy.cpu_zones(powercap)] == ["intel-rapl:0", "intel-rapl:1"]


def test_a_powercap_meter_adds_the_packages_and_the_wrap_around(powercap):
    meter = energy.PowercapMeter(powercap)
    assert "intel-rapl:0" in meter.source and "intel-rapl:1" in meter.source
    assert meter.update() == 0
    # Package 0 uses 2 J; package 1 uses 1.5 J and wraps around at 10 J.
    (powercap / "intel-rapl:0" / "energy_uj").write_text("3000000\n")
    (powercap / "intel-rapl:1" / "energy_uj").write_text("1000000\n")
    (powercap / "intel-rapl:0:0" / "energy_uj").write_text("9000000\n")
    assert meter.update() == pytest.approx(2.0 + 1.5)


def test_the_meter_thread_reads_across_more_than_one_wrap(powercap):
    """Readings taken between wraps (as the meter's thread takes them) add up past the range."""
    meter = energy.PowercapMeter(powercap)
    counter = powercap / "intel-rapl:0" / "energy_uj"
    for reading in (6_000_000, 1_000_000, 6_000_000, 1_000_000):  # two wraps of 10 J
        counter.write_text(f"{reading}\n")
        meter.update()
    assert meter.update() == pytest.approx(20.0)


def test_intervals_give_the_energy_of_each_epoch(powercap):
    meter = energy.PowercapMeter(powercap)
    counter = powercap / "intel-rapl:0" / "energy_uj"
    intervals = energy.Intervals(meter)
    for start, stop in ((1_000_000, 4_000_000), (4_000_000, 6_000_000)):
        counter.write_text(f"{start}\n")
        intervals.begin()
        counter.write_text(f"{stop}\n")
        intervals.end()
    assert intervals.joules == pytest.approx([3.0, 2.0])


def test_a_started_meter_stops_its_thread(powercap):
    with energy.PowercapMeter(powercap, poll=0.01) as meter:
        assert meter._thread.is_alive()
    assert not meter._thread.is_alive()


# --- where no counter can be read ---------------------------------------------------------------

@pytest.mark.bad_input("no energy counter")
def test_no_powercap_tree_says_why(tmp_path):
    with pytest.raises(energy.EnergyUnavailable, match="shows no CPU energy counters"):
        energy.open_meter("cpu", powercap=tmp_path / "missing")


@pytest.mark.bad_input("no energy counter")
def test_an_unreadable_counter_says_why(powercap, monkeypatch):
    real = Path.read_text

    def read_text(path, *args, **kwargs):
        if path.name == "energy_uj":
            raise PermissionError(13, "Permission denied")
        return real(path, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", read_text)
    with pytest.raises(energy.EnergyUnavailable, match="readable by root only"):
        energy.open_meter("cpu", powercap=powercap)


@pytest.mark.bad_input("no energy counter")
def test_the_record_keeps_the_reason_and_the_page_says_not_measurable(tmp_path):
    intervals, reason = kept.start_intervals("cpu", powercap=tmp_path)
    assert intervals.meter is None and "no CPU energy counters" in reason
    intervals.begin()
    intervals.end()
    record = {"energy": kept.stop_intervals(intervals, reason, warmup=1, images=100)}
    assert record["energy"] == {"measured": False, "reason": reason}
    text = kept.energy_text(record)
    assert text.startswith("not measurable on this machine (") and reason in text
    assert kept.energy_summary(record) is None


@pytest.mark.bad_input("bad argument")
def test_an_unknown_device_kind_is_refused():
    with pytest.raises(ValueError, match="give 'cpu' or 'gpu'"):
        energy.open_meter("tpu")


def test_a_record_made_before_energy_was_measured_says_not_measured():
    assert kept.energy_text({"device": "CPU"}) == kept.NOT_MEASURED
    assert kept.energy_text(None, missing="not recorded yet") == "not recorded yet"


# --- NVML, through stand-ins ------------------------------------------------------------------

class FakeNvml:
    """NVML's two readings: a total energy counter (mJ), or only the power (mW)."""

    def __init__(self, counter=True, power=True):
        self.millijoules, self.milliwatts = 0, 0
        self.counter, self.power = counter, power

    def nvmlDeviceGetTotalEnergyConsumption(self, handle):
        if not self.counter:
            raise RuntimeError("Not Supported")
        return self.millijoules

    def nvmlDeviceGetPowerUsage(self, handle):
        if not self.power:
            raise RuntimeError("Not Supported")
        return self.milliwatts


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_the_gpu_energy_counter_is_used_where_there_is_one():
    nvml = FakeNvml()
    meter = energy.gpu_meter(nvml, "handle")
    assert isinstance(meter, energy.NvmlCounterMeter)
    nvml.millijoules = 123_456
    assert meter.update() == pytest.approx(123.456)


def test_without_a_counter_the_gpu_power_is_sampled_and_integrated():
    nvml, clock = FakeNvml(counter=False), Clock()
    nvml.milliwatts = 100_000
    meter = energy.gpu_meter(nvml, "handle", clock=clock)
    assert isinstance(meter, energy.NvmlPowerMeter)
    for now, milliwatts in ((1.0, 100_000), (2.0, 300_000), (3.0, 300_000)):
        clock.now, nvml.milliwatts = now, milliwatts
        meter.update()
    assert meter.update() == pytest.approx(100 + 200 + 300)


@pytest.mark.bad_input("no energy counter")
def test_a_gpu_that_reports_neither_says_so():
    with pytest.raises(energy.EnergyUnavailable, match="neither its energy nor its power"):
        energy.gpu_meter(FakeNvml(counter=False, power=False), "handle")


# --- what a record keeps --------------------------------------------------------------------------

def test_a_measured_record_keeps_every_interval_and_the_warmup_apart():
    found = kept.measured("RAPL package counters (intel-rapl:0)", [50.0, 40.0, 44.0, 42.0],
                          warmup=1, images=200)
    assert found["summary"]["samples"] == [40.0, 44.0, 42.0]
    assert found["summary"]["warmup"] == [50.0] and found["summary"]["unit"] == "J"
    record = {"energy": found}
    assert kept.energy_summary(record, per_image=True)["median"] == pytest.approx(42.0 / 200)
    assert kept.energy_summary(record, factor=30)["max"] == pytest.approx(44.0 * 30)
    assert kept.energy_text(record) == "42 J (range 40 J–44 J, 3 epochs)"


@pytest.mark.bad_input("bad argument")
def test_a_measurement_without_a_timed_interval_is_refused():
    with pytest.raises(ValueError, match="no timed interval"):
        kept.measured("x", [50.0], warmup=1, images=10)
