"""The job part: one short job on the site's GPU partition that runs the checks of
:mod:`gpulesson.classroom.check.job` with the kernel's Python and settings, and hands back its items."""

import json
import shlex
import time
from pathlib import Path

from gpulesson.classroom.check.report import fail, items_from_json, ok, run

POLL = 2  # seconds between two looks at the queue
# Set in the check's own job: the kernel's settings are exported there, so the job checks that
# they reach it. Run by hand (srun --pty), the check reads them from the kernel's spec instead.
JOB_MARK = "GPULESSON_CHECK_JOB"
# Episode 2's request, so that the check asks for what learners will ask for.
CORES, MEMORY = 4, "24G"


def job_script(root: Path, python: str, env: dict, out: Path) -> str:
    exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in {**env, JOB_MARK: "1"}.items())
    return ("#!/bin/bash\n"
            "# The lesson's readiness check on a compute node (python -m gpulesson.classroom.check).\n"
            f"cd {shlex.quote(str(root))}\n{exports}"
            f"{shlex.quote(python)} -m gpulesson.classroom.check --inside-job "
            f"--json {shlex.quote(str(out))}/gpulesson-check-$SLURM_JOB_ID.json\n"
            "# 1: the checks ran and one failed (the checklist says which): the job did its work.\n"
            'status=$?\nif [ "$status" -le 1 ]; then exit 0; fi\nexit "$status"\n')


def sbatch_args(site: dict, minutes: int, out: Path) -> list[str]:
    args = [f"--partition={site['gpu_partition']}", f"--time={minutes}", "--nodes=1", "--ntasks=1",
            f"--cpus-per-task={CORES}", f"--mem={MEMORY}", "--job-name=gpulesson-check",
            f"--output={out}/gpulesson-check-%j.out"]
    if str(site.get("account") or "").strip():
        args.append(f"--account={site['account']}")
    if str(site.get("gres_example") or "").strip():
        args.append(f"--gres={site['gres_example']}")
    return args


def _queue(job_id: str) -> tuple[str, str]:
    """(state, reason) as squeue shows them; ("", "") once the job has left the queue."""
    result = run("squeue", "--noheader", "--jobs", job_id, "--format=%T|%r")
    if result is None:
        return "UNKNOWN", "squeue did not answer"
    line = result.stdout.strip().splitlines()[:1]
    if line and "|" in line[0]:
        return tuple(line[0].split("|", 1))
    if result.returncode != 0 and "invalid job id" not in result.stderr.lower():
        return "UNKNOWN", result.stderr.strip()  # the controller busy: look again
    return "", ""


def run_job(root: Path, site: dict, python: str, env: dict, out: Path, *, queue_wait: float,
            minutes: int, say=print):
    """Submit the job, wait ``queue_wait`` seconds at most for it to start, then until it ends
    (its time limit bounds that); return its items, and one for the job itself."""
    from gpulesson.classroom.share import CLASS_ENV, class_folder

    title = "Job on the GPU partition"
    out.mkdir(parents=True, exist_ok=True)
    script = out / "gpulesson-check.sbatch"
    folder = class_folder(site.get("class_results"))  # the one the login node checked (--config)
    env = {**env, CLASS_ENV: str(folder)} if folder else env
    script.write_text(job_script(root, python, env, out))
    args = sbatch_args(site, minutes, out)
    submitted = run("sbatch", "--parsable", *args, str(script), timeout=120)
    if submitted is None or submitted.returncode != 0:
        said = (submitted.stderr or submitted.stdout).strip().splitlines() if submitted else []
        return [fail(title, f"sbatch refused it: {said[-1] if said else 'no answer'}",
                     "correct gpu_partition, account or gres_example in _config.yml (sbatch "
                     f"{' '.join(args)} must be accepted)")]
    job_id = submitted.stdout.strip().split(";")[0]
    try:
        return _wait(job_id, title, out, python, site, queue_wait, minutes, say)
    except KeyboardInterrupt:
        run("scancel", job_id)
        raise


def _wait(job_id, title, out, python, site, queue_wait, minutes, say):
    say(f"Submitted job {job_id} to {site['gpu_partition']}; waiting up to {queue_wait:g} s for "
        f"it to start ...")
    start = time.monotonic()
    state, reason = _queue(job_id)
    while state in ("PENDING", "UNKNOWN"):
        if time.monotonic() - start > queue_wait:
            run("scancel", job_id)
            return [fail(title, f"job {job_id} did not start within {queue_wait:g} s (Slurm's "
                         f"reason: {reason}); cancelled",
                         "ask the site for a reservation or workshop partition for the class "
                         "(learners would wait too), or run again with a longer --queue-wait")]
        time.sleep(POLL)
        state, reason = _queue(job_id)
    started = time.monotonic()
    while state:
        if time.monotonic() - started > minutes * 60 + 120:
            run("scancel", job_id)
            break
        time.sleep(POLL)
        state, reason = _queue(job_id)
    log, report = out / f"gpulesson-check-{job_id}.out", out / f"gpulesson-check-{job_id}.json"
    if not report.is_file():
        tail = log.read_text(errors="replace").strip().splitlines()[-3:] if log.is_file() else []
        return [fail(title, f"job {job_id} ended without its checklist: "
                     + (" | ".join(tail) or f"no output in {log}"),
                     f"read {log}: the kernel's Python ({python}) or the lesson folder may not "
                     "be there on the compute nodes, or the job ran past its --time-limit")]
    data = json.loads(report.read_text(encoding="utf-8"))
    waited = started - start
    return [ok(title, f"job {job_id} started after {waited:.0f} s on {data.get('host')}"),
            *items_from_json(data)]
