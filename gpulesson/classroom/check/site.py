"""The site values in ``_config.yml`` (filled, not the lesson's examples, the partitions known
to Slurm, the charging rates named as the site's) and the Open OnDemand app's form values."""

import re
from pathlib import Path

from gpulesson.classroom.charges import sessions
from gpulesson.classroom.check.limits import _run as run_slurm
from gpulesson.classroom.check.login import CONFIG, ROOT, site_values
from gpulesson.classroom.check.report import fail, ok, skip

# The lesson's example values say so: "Example HPC", "login.hpc.example.edu", "your_project".
EXAMPLE = re.compile(r"example|\byour_", re.I)
SITE_KEYS = ("cluster_name", "login_host", "ondemand_url", "docs_url", "account",
             "gpu_partition", "cpu_partition")
MAY_BE_EMPTY = {"account"}  # a site without accounts leaves it empty (the form says so)
OOD_APP = "gpulesson-jupyterlab"
OOD_PLACES = (Path("/var/www/ood/apps/sys") / OOD_APP, Path("~/ondemand/dev").expanduser() / OOD_APP)
OOD_CLUSTERS = Path("/etc/ood/config/clusters.d")
OOD_DASHBOARD_ENV = Path("/etc/ood/config/apps/dashboard/env")
OOD_VERSION = Path("/opt/ood/VERSION")
DYNAMIC_JS = "OOD_BC_DYNAMIC_JS"


def check_site(config: Path = CONFIG):
    from gpulesson.classroom.charges import ChargeRatesError, read_rates

    site = site_values(config)
    where = f"the section lesson_site of {config}"
    bad = [k for k in SITE_KEYS if (not str(site.get(k) or "").strip() and k not in MAY_BE_EMPTY)
           or EXAMPLE.search(str(site.get(k) or ""))]
    items = [fail("Site values", f"example or empty: {', '.join(bad)}",
                  f"set your site's {', '.join(bad)} in {where}, then rebuild the site (make site)")
             if bad else ok("Site values", f"account {site.get('account') or '(none)'}, partitions "
                            f"{site.get('gpu_partition')} and {site.get('cpu_partition')}")]
    out = run_slurm("sinfo", "--noheader", "--format=%R")
    known = None if out is None else set(out.split())  # the partitions Slurm knows
    wanted = [str(site.get(k)) for k in ("gpu_partition", "cpu_partition") if site.get(k)]
    if known is None:
        items.append(skip("Partitions in Slurm", "no sinfo on this machine"))
    elif set(wanted) - known:
        items.append(fail("Partitions in Slurm", f"Slurm has no {', '.join(sorted(set(wanted) - known))} "
                          f"(it has {', '.join(sorted(known)) or 'none'})",
                          f"set gpu_partition and cpu_partition in {where} to partitions of `sinfo`"))
    else:
        items.append(ok("Partitions in Slurm", ", ".join(wanted)))
    try:
        rates = read_rates(config)
    except ChargeRatesError as exc:
        items.append(fail("Charging rates", str(exc), f"set charge_unit, core_hour_rate and "
                          f"gpu_hour_rate in {where}"))
    else:
        detail = f"{rates.core_hour:g} {rates.unit} per core-hour, {rates.gpu_hour:g} per GPU-hour"
        if not rates.note.strip() or EXAMPLE.search(rates.note):
            items.append(fail("Charging rates", f"{detail}, still called example rates",
                              f"set your site's rates in {where} and write charge_note naming them "
                              "as your site's (the pages show it beside every cost)"))
        else:
            items.append(ok("Charging rates", f"{detail}: {rates.note}"))
    return items, site


def _text(path: Path) -> str:
    """The file's text; "" when it cannot be read (not an Open OnDemand host, say)."""
    try:
        return path.read_text()
    except OSError:
        return ""


def _app_config(app: Path) -> Path:
    """The _config.yml an installed app reads (see ood/gpulesson-jupyterlab/lesson_site.rb)."""
    found = re.search(r"^\s*(?:export\s+)?GPULESSON_SITE_CONFIG=[\"']?([^\"'\s]+)",
                      _text(OOD_DASHBOARD_ENV), re.M)
    return Path(found[1]) if found else app.resolve().parents[1] / "_config.yml"


def check_ood(site: dict, config: Path = CONFIG, app: Path | None = None):
    title = "Open OnDemand app"
    places = [Path(app)] if app else list(OOD_PLACES)
    installed = next((p for p in places if (p / "form.yml.erb").is_file()), None)
    if installed is None:
        return [skip(title, f"not installed in {' or '.join(map(str, places))}: check that the "
                     "portal's own JupyterLab app can ask for a GPU")]
    reads = _app_config(installed)
    if not reads.is_file() or not reads.samefile(config):
        return [fail(title, f"{installed} reads {reads}, not {config}",
                     f"link the app into this lesson: ln -sfn {ROOT / 'ood' / OOD_APP} {installed}")]
    # The most a session may ask for must allow each of the workshop's sessions.
    problems = []
    for session in sessions(config):  # the form fields a session sets (lesson_schedule.sessions)
        for key in ("hours", "cores", "memory_gb", "gpus"):
            value, asked = site.get(f"session_max_{key}"), session.get(key, 0)
            if not str(value).isdigit() or int(value) < int(asked):
                problems.append(f"session_max_{key} is {value!r}, less than the "
                                f"{session.get('label', 'session')}'s {asked}")
    cluster = str(site.get("ood_cluster") or "")
    if not cluster or EXAMPLE.search(cluster):
        problems.append(f"ood_cluster is {cluster!r}")
    elif OOD_CLUSTERS.is_dir() and not (OOD_CLUSTERS / f"{cluster}.yml").is_file():
        problems.append(f"no {OOD_CLUSTERS / cluster}.yml")
    if not str(site.get("gpu_gres_types") or "").split():
        problems.append("gpu_gres_types is empty")
    if problems:
        return [fail(title, "; ".join(problems), f"set these form values in the section lesson_site "
                     f"of {config}"), check_dynamic_form()]
    return [ok(title, f"{installed}, cluster {cluster}, up to {site['session_max_gpus']} GPUs, "
                      f"{site['session_max_hours']} h"), check_dynamic_form()]


def check_dynamic_form(env_file: Path | None = None, version_file: Path | None = None):
    """Open OnDemand's dynamic batch-connect form, without which the session menu's "GPU session"
    silently keeps the CPU partition and no GPU."""
    title = "Session menu (dynamic form)"
    env_file, version_file = env_file or OOD_DASHBOARD_ENV, version_file or OOD_VERSION
    version, env = _text(version_file).strip(), _text(env_file)
    setting = re.search(rf"^\s*(?:export\s+)?{DYNAMIC_JS}=[\"']?(\w+)", env, re.M)
    major = int(version.split(".")[0]) if version.split(".")[0].isdigit() else None
    if setting and setting[1].lower() in ("true", "1", "yes"):
        return ok(title, f"{DYNAMIC_JS}={setting[1]} in {env_file}")
    if setting is None and major is not None and major >= 3:
        return ok(title, f"Open OnDemand {version}: on by default")
    why = (f"{DYNAMIC_JS}={setting[1]} in {env_file}" if setting else
           f"no {DYNAMIC_JS}=true in {env_file}" + (f" (Open OnDemand {version})" if version
                                                      else ""))
    return fail(title, f"{why}: choosing the GPU session in the menu would keep the CPU "
                       "partition and no GPU", f"add the line {DYNAMIC_JS}=true to {env_file} "
                       "(Open OnDemand 2.x; ask the portal's admins), then check that choosing "
                       "\"GPU session\" fills in the GPU partition and 1 GPU")
