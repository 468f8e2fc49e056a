"""``python -m gpulesson.classroom.check``: is this cluster (or laptop) ready for the workshop?

Run on the login node: checks the kernel, the data, the class folder, the site values and the
Open OnDemand app there, then one short job on the GPU partition; prints the checklist and
writes it as JSON. Exit status 0 when nothing failed (items not checked allowed), 1 otherwise,
also with --inside-job (with --record: 0 once the record is written, which holds any failure).
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from gpulesson.classroom.check import learner_items, limits, login, report
from gpulesson.classroom.check import site as site_check
from gpulesson.classroom.check.example import append_check
from gpulesson.classroom.check.job import inside_job
from gpulesson.classroom.check.report import fail, items_from_json, ok, run, skip
from gpulesson.classroom.check.submit import JOB_MARK, run_job
from gpulesson.datasets.settings import get_settings
from gpulesson.errors import cannot_write_file


def parse(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m gpulesson.classroom.check",
                                     description=__doc__.split("\n\n")[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", type=Path, default=Path(report.DEFAULT_JSON),
                        help="where to write the checklist as JSON (default: %(default)s here)")
    parser.add_argument("--queue-wait", type=float, default=300, metavar="SECONDS",
                        help="how long the job may wait in the queue before it counts as not "
                             "started and is cancelled (default: %(default)s)")
    parser.add_argument("--time-limit", type=int, default=15, metavar="MINUTES",
                        help="the job's --time (default: %(default)s)")
    parser.add_argument("--config", type=Path, default=login.CONFIG,
                        help="the lesson's _config.yml with the site values (default: this lesson's)")
    parser.add_argument("--kernel", default=login.KERNEL, help="the kernel's name (default: %(default)s)")
    parser.add_argument("--ood-app", type=Path, help="where the Open OnDemand app is installed "
                        f"(default: {' or '.join(map(str, site_check.OOD_PLACES))})")
    parser.add_argument("--laptop", action="store_true",
                        help="check the laptop path (make lab) instead of a cluster; the default "
                             "where there is no sbatch")
    parser.add_argument("--no-job", action="store_true", help="only the login node's checks")
    parser.add_argument("--learner", action="store_true",
                        help="a learner's self-check, a week before the workshop, in the lesson's "
                             "environment: packages, settings, data, GPU, loaded modules, space "
                             "in the home folder")
    parser.add_argument("--inside-job", action="store_true",
                        help="only the compute node's checks, here (what the job runs; on a node "
                             "you are logged in to, e.g. with srun --pty, with the settings of "
                             "the kernel --kernel)")
    parser.add_argument("--record", type=Path, metavar="FILE",
                        help="with --inside-job: also append the checklist as one record to the "
                             "results file FILE (no host name), as the lesson's GPU recording "
                             "does for the guide's example (results/check-gpu.jsonl)")
    args = parser.parse_args(argv)
    if args.queue_wait < 0 or args.time_limit < 1:
        parser.error("--queue-wait must be 0 or more seconds, --time-limit at least 1 minute")
    if args.record and not args.inside_job:
        parser.error("--record goes with --inside-job: it records a compute node's checklist")
    if not args.config.is_file():
        what = "is a folder" if args.config.is_dir() else "does not exist"
        parser.error(f"argument --config: {args.config} {what}: name the lesson's _config.yml "
                     f"(default: {login.CONFIG})")
    problem = _unreadable_config(args.config)
    if problem:
        parser.error(f"argument --config: {args.config} {problem}: correct it (a copy of the "
                     f"lesson's _config.yml shows the layout), or name the lesson's _config.yml")
    folder = args.json.expanduser().parent
    if not folder.is_dir():
        parser.error(f"argument --json: the folder {folder} does not exist: create it first, or "
                     f"name a file in a folder that exists")
    problem = cannot_write_file(args.json)
    if problem:
        parser.error(f"argument --json: {problem}")
    return args


def _unreadable_config(config: Path) -> str | None:
    """Why ``config`` cannot give the site values (None: it can), found before any check runs."""
    import yaml

    try:
        values = yaml.safe_load(config.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        return f"is not valid YAML{where} ({getattr(exc, 'problem', None) or type(exc).__name__})"
    except (OSError, UnicodeDecodeError) as exc:
        return f"cannot be read ({getattr(exc, 'strerror', None) or type(exc).__name__})"
    if not isinstance(values, dict):
        return "holds no settings (it is not a YAML mapping like the lesson's _config.yml)"
    return None


def _settings(environ):
    return get_settings({**os.environ, **environ})


def _local_job(python: str, env: dict) -> list:
    """The compute node's checks run here, with the kernel's Python and settings (a laptop)."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "job.json"
        command = [python, "-m", "gpulesson.classroom.check", "--inside-job", "--json", str(out)]
        result = run(*command, "--laptop", cwd=login.ROOT, env={**os.environ, **env}, timeout=900)
        if not out.is_file():
            said = (result.stderr or result.stdout).strip().splitlines()[-1:] if result else []
            return [fail("Kernel's Python runs the checks", (said or ["no output"])[0],
                         f"run {' '.join(command)} to see the whole error")]
        return items_from_json(json.loads(out.read_text(encoding="utf-8")))


def laptop(args) -> list:
    why = "a laptop run (make lab): no cluster"
    venv = login.ROOT / ".venv" / "bin" / "python"
    items = [ok("Environment .venv", str(venv)) if venv.exists() else
             fail("Environment .venv", f"no {venv}", "create it: make lab")]
    kernel, python, env = login.check_kernel(args.kernel)
    items += kernel + login.check_data(_settings(env), shared=False)
    items += [skip(name, why) for name in ("Class folder", "Site values", "Open OnDemand app")]
    if python and not args.no_job:
        items += _local_job(python, env)
    return items


def cluster(args) -> list:
    kernel, python, env = login.check_kernel(args.kernel)
    data_dir = str(login.site_values(args.config).get("data_dir") or "").strip()
    if data_dir and "LESSON_DATA_DIR" not in env:  # as the app exports it in each session
        env = {**env, "LESSON_DATA_DIR": data_dir}
    settings = _settings(env)
    items = kernel + login.check_data(settings)
    site_items, site = site_check.check_site(args.config)
    items += login.check_class_folder(site, settings.data_dir) + site_items
    items += limits.check_limits(site, args.config)
    items += site_check.check_ood(site, args.config, args.ood_app)
    title = "Job on the GPU partition"
    if args.no_job:
        items.append(skip(title, "--no-job"))
    elif python is None:
        items.append(skip(title, "no kernel to run it with (see above)"))
    elif not site.get("gpu_partition"):
        items.append(skip(title, "no gpu_partition in the site values"))
    else:
        out = args.json.resolve().parent / "gpulesson-check-jobs"
        items += run_job(login.ROOT, site, python, env, out, queue_wait=args.queue_wait,
                         minutes=args.time_limit, say=lambda line: print(line, flush=True))
    return items


def _by_hand(kernel: str):
    """Run by hand, not in the check's own job: the kernel's settings from its spec, applied here,
    and the item on them; (None, None) in the check's job."""
    if os.environ.get(JOB_MARK):
        return None, None
    spec, found = login.find_kernel(kernel)
    fix = login.register_fix(kernel)
    if spec is None:  # settings exported by hand (as the lesson's GPU recording does) count
        item = login.check_settings(os.environ, fix)
        if item.status != "ok":
            item.detail = f'no kernel "Python ({kernel})" is registered, and {item.detail}'
        return {}, item
    env = {k: str(v) for k, v in (found.get("env") or {}).items()}
    os.environ.update(env)
    item = login.check_settings(env, fix)
    if item.status == "ok":
        item.detail += f" (from {spec})"
    return env, item


def main(argv=None) -> int:
    args = parse(argv)
    if args.learner:
        items = learner_items()
        print(report.text(items, title=f"Your setup for the workshop ({sys.executable}):"))
        print("All set." if report.all_passed(items) else
              "Do what each ✗ says, then run this again; send the lines with ✗ to your "
              "instructor if you are stuck.")
        return report.exit_status(items)
    if args.inside_job:
        mode = "laptop" if args.laptop else "job"
        env, settings_item = (None, None) if args.laptop else _by_hand(args.kernel)
        items = inside_job(_settings(env or {}), gpu_expected=not args.laptop, where=mode,
                           settings_item=settings_item)
    elif args.laptop or shutil.which("sbatch") is None:
        mode = "laptop"
        if not args.laptop:
            print("No sbatch here: checking the laptop path (make lab); on a cluster, run this "
                  "on the login node.", flush=True)
        items = laptop(args)
    else:
        mode = "cluster"
        items = cluster(args)
    print(report.text(items, title=f"Lesson readiness check ({mode}, {sys.executable}):"))
    path = report.write_json(args.json, items, mode=mode, lesson=str(login.ROOT))
    if args.record:  # with --inside-job: the record holds the findings, ✗ included
        print(f"Recorded in {append_check(args.record, items, _settings({}))}")
        return 0
    if not args.inside_job:
        print(f"Written to {path}: send it to your site's support with any ✗.")
    return report.exit_status(items)


if __name__ == "__main__":
    sys.exit(main())
