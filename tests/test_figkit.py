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


def test_panels_in_rows_and_a_title_from_the_data_label():
    import matplotlib.pyplot as plt

    fig, axes = figkit.panels(5, (4, 4), columns=2)  # three rows, the last with a spare panel
    assert len(axes) == 6 and axes[0].get_position().y0 == axes[1].get_position().y0
    figkit.title(fig, "Sums", None, "", "second line")  # no label given, an empty line left out
    assert fig.get_suptitle() == "Sums | data source not given\nsecond line"
    figkit.title(fig, None, "CIFAR-10")
    assert fig.get_suptitle() == "CIFAR-10"
    plt.close(fig)
