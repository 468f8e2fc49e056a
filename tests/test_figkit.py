"""The experiments' figure skeleton (gpulesson/records/figkit.py)."""

import pytest

from gpulesson.records import figkit


@pytest.mark.bad_input("missing file")
def test_no_records_is_refused_with_how_to_record_them():
    with pytest.raises(ValueError, match="no records to plot: run python -m x"):
        figkit.need([], "run python -m x")
    figkit.need([{}], "run python -m x")  # records: nothing said


def test_panels_stand_one_under_another_or_side_by_side():
    import matplotlib.pyplot as plt

    fig, axes = figkit.panels(3, (4, 6))
    assert len(axes) == 3 and axes[0].get_position().y0 > axes[1].get_position().y0
    wide, side = figkit.panels(2, (6, 3), across=True)
    assert side[0].get_position().x0 < side[1].get_position().x0
    plt.close(fig), plt.close(wide)
