"""The readiness check's site values and the Open OnDemand app (python -m gpulesson.classroom.check):
the values an instructor fills in, the rates, the partitions asked of Slurm, the app where it is
installed and its session menu's dynamic form."""

import shutil
from pathlib import Path

import pytest
import yaml
from conftest import ROOT

from gpulesson.classroom.check import login, site
from gpulesson.classroom.check.report import FAIL, OK, SKIP


def by_name(items):
    return {item.name: item for item in items}


def filled_config(tmp_path) -> Path:
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config["lesson_site"].update(
        cluster_name="Alpine", login_host="login.alpine.uni.test", ondemand_url="https://od.uni.test",
        docs_url="https://docs.uni.test/gpu", account="ws-2026", ood_cluster="alpine",
        charge_note="Alpine's rates for 2026, from its user guide.")
    path = tmp_path / "_config.yml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.bad_input("bad argument")
def test_example_site_values_and_rates_are_named(tmp_path, monkeypatch):
    monkeypatch.setattr(site, "run_slurm", lambda *command: None)
    copy = tmp_path / "_config.yml"
    shutil.copy(ROOT / "_config.yml", copy)
    items = by_name(site.check_site(copy)[0])
    values = items["Site values"]
    assert values.status == FAIL
    for key in ("cluster_name", "login_host", "account"):
        assert key in values.detail and key in values.fix
    assert items["Charging rates"].status == FAIL and "example" in items["Charging rates"].detail
    assert items["Partitions in Slurm"].status == SKIP


def test_filled_site_values_pass_and_partitions_are_asked_of_slurm(tmp_path, monkeypatch):
    config = filled_config(tmp_path)
    monkeypatch.setattr(site, "run_slurm", lambda *command: "gpu\ncompute\ndebug\n")
    items = by_name(site.check_site(config)[0])
    assert {name: item.status for name, item in items.items()} == {
        "Site values": OK, "Partitions in Slurm": OK, "Charging rates": OK}
    monkeypatch.setattr(site, "run_slurm", lambda *command: "debug\n")
    partitions = by_name(site.check_site(config)[0])["Partitions in Slurm"]
    assert partitions.status == FAIL and "gpu" in partitions.detail


def test_the_ood_app_is_checked_where_installed(tmp_path):
    values = login.site_values()
    [absent] = site.check_ood(values, login.CONFIG, tmp_path / "nowhere")
    assert absent.status == SKIP and "portal's own JupyterLab app" in absent.detail
    app = tmp_path / site.OOD_APP
    app.symlink_to(ROOT / "ood" / site.OOD_APP)
    [example, _] = site.check_ood(values, login.CONFIG, app)
    assert example.status == FAIL and "ood_cluster is 'example'" in example.detail
    # An app that reads another lesson's _config.yml than the one checked.
    [other] = site.check_ood(values, filled_config(tmp_path), app)  # stops there
    assert other.status == FAIL and other.fix.startswith("link the app into this lesson")
    assert site.check_ood({**values, "ood_cluster": "alpine"}, login.CONFIG, app)[0].status == OK
    # The site's limits must allow each workshop session (lesson_schedule.sessions).
    [short, _] = site.check_ood({**values, "ood_cluster": "alpine", "session_max_hours": 4,
                                 "session_max_gpus": 0}, login.CONFIG, app)
    assert short.status == FAIL and "session_max_hours is 4, less than the CPU session's 6" in \
        short.detail and "session_max_gpus is 0, less than the GPU session's 1" in short.detail



@pytest.mark.bad_input("bad form input")
@pytest.mark.parametrize("env, version, status", [
    ("OOD_BC_DYNAMIC_JS=true\n", "2.0.32", OK), ("", "3.1.7", OK), ("", "2.0.32", FAIL),
    ("export OOD_BC_DYNAMIC_JS=false\n", "3.1.7", FAIL), ("", None, FAIL)])
def test_the_session_menu_needs_the_dynamic_form(tmp_path, env, version, status):
    env_file, version_file = tmp_path / "env", tmp_path / "VERSION"
    env_file.write_text(env)
    if version:
        version_file.write_text(version)
    item = site.check_dynamic_form(env_file, version_file)
    assert item.status == status, item
    if status == FAIL:
        assert "keep the CPU partition" in item.detail and "OOD_BC_DYNAMIC_JS=true" in item.fix


