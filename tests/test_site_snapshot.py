"""tools/site_snapshot.py: a change of the code that makes the pages is seen value by value."""

import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import site_snapshot


def test_every_changed_new_or_missing_value_and_figure_is_named():
    before = {"values": {"ref_a": "1 s", "ref_b": "2 s"}, "figures": {"fig/x.svg": "aa"}}
    assert site_snapshot.differences(before, before) == []
    after = {"values": {"ref_a": "1.1 s", "ref_c": "3 s"}, "figures": {"fig/x.svg": "ab"}}
    assert site_snapshot.differences(before, after) == [
        "values ref_a: changed", "values ref_b: missing now", "values ref_c: new",
        "figures fig/x.svg: changed"]
