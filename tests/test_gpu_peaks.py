"""The published-peak table: a recorded GPU model finds its card, an unknown one finds none."""

import pytest

from gpulesson.machine import gpu_peaks


@pytest.mark.parametrize(("recorded", "card"), [
    ("NVIDIA H200", "H200"),
    ("NVIDIA H200 NVL", None),  # the PCIe board: not the SXM's peaks
    ("NVIDIA H100 NVL", None),
    ("NVIDIA H100 80GB HBM3", "H100 SXM"),
    ("NVIDIA H100 PCIe", "H100 PCIe"),
    ("NVIDIA A100-SXM4-80GB", "A100"),
    ("NVIDIA GeForce RTX 3080", None),
    (None, None),
])
def test_a_recorded_model_finds_its_card(recorded, card):
    assert gpu_peaks.card(recorded) == card
    assert (gpu_peaks.peaks_for(recorded) is None) == (card is None)
    if card:
        assert card in gpu_peaks.SOURCES


def test_peaks_are_ordered_as_the_hardware_is():
    for card, peaks in gpu_peaks._TABLES.items():
        assert peaks["fp32"] < peaks["tf32"] < peaks["bf16"] == peaks["fp16"], card


def test_share_of_peak():
    assert gpu_peaks.share_of_peak(98.95, "NVIDIA H200", "bf16") == pytest.approx(0.1)
    assert gpu_peaks.share_of_peak(1.0, "a card nobody knows", "bf16") is None
    with pytest.raises(ValueError, match="precision must be one of"):
        gpu_peaks.share_of_peak(1.0, "NVIDIA H200", "float32")
