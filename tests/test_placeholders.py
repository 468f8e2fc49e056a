"""Placeholders: site values from _config.yml and measured values from results/, in pages and notebooks."""

import pytest
import yaml
from carpentry import PLACEHOLDER, PlaceholderError, fill_placeholders, placeholder_values, site_values
from conftest import ROOT, lesson_files

PAGES = sorted(p for p in ROOT.glob("*.md") if p.name not in ("README.md", "CONTRIBUTING.md", "CODE_OF_CONDUCT.md"))
PAGES += sorted((ROOT / "_episodes").glob("*.md"))


def test_placeholders_are_filled_everywhere_and_unknown_ones_refused(tmp_path):
    values = {"ref_a": "1.5 s", "site_host": "login.example"}
    text = "took {{ ref_a }} and {{ref_a}}\n```bash\nssh {{ site_host }}\n```"
    assert fill_placeholders(text, tmp_path, values) == "took 1.5 s and 1.5 s\n```bash\nssh login.example\n```"
    assert fill_placeholders("not ours: {{ other }}", tmp_path, values) == "not ours: {{ other }}"
    with pytest.raises(PlaceholderError, match="site_nope.*lesson_site"):
        fill_placeholders("{{ site_nope }}", tmp_path, values)


def test_site_values_come_from_one_section_of_config():
    section = yaml.safe_load((ROOT / "_config.yml").read_text())["lesson_site"]
    values = site_values(ROOT)
    computed = {k: v for k, v in values.items() if k.startswith("site_cost_")}  # from the rates
    assert computed and computed["site_cost_cpu_session"].endswith(f" {section['charge_unit']}")
    assert {k: v for k, v in values.items() if k not in computed} == {
        f"site_{k}": str(v) for k, v in section.items()}
    assert {"site_cluster_name", "site_login_host", "site_gpu_partition", "site_gres_example"} <= values.keys()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_placeholder_in_the_pages_has_a_value(page):
    filled = fill_placeholders(page.read_text(encoding="utf-8"), ROOT)
    assert not PLACEHOLDER.search(filled)


def test_an_unknown_placeholder_fails_the_build(tmp_path):
    from conftest import build_book

    source = lesson_files(tmp_path)
    # In the first page read, and the build stops at the first error: it fails in seconds.
    index = source / "index.md"
    index.write_text(index.read_text() + "\nLog in to {{ site_no_such_key }}.\n")
    result = build_book(source, keep_going=False)
    assert result.returncode != 0
    assert "site_no_such_key" in result.stdout + result.stderr


def test_a_changed_site_value_reaches_the_pages(tmp_path):
    from conftest import build_book

    source = lesson_files(tmp_path)
    config = (source / "_config.yml").read_text()
    value = placeholder_values(ROOT)["site_cluster_name"]
    (source / "_config.yml").write_text(config.replace(f'cluster_name: "{value}"', 'cluster_name: "Zebra Cluster"'))
    (source / "setup.md").write_text((source / "setup.md").read_text() + "\nOn {{ site_cluster_name }}.\n")
    result = build_book(source)
    assert result.returncode == 0, result.stdout[-2000:]
    assert "On Zebra Cluster." in (source / "_build" / "html" / "setup.html").read_text()


def test_results_modules_may_not_share_a_placeholder():
    from carpentry import result_values

    with pytest.raises(PlaceholderError, match="gpulesson.experiments.cnn.page"):
        result_values(ROOT, ("gpulesson.experiments.cnn.page", "gpulesson.experiments.cnn.page"))
