"""What Slurm allows the workshop's sessions, read from Slurm rather than typed in: partitions'
MaxTime, QOS and account limits (GPUs for the whole class at once), users' limits; and the home
folder's quota, which often allows less than the file system's free space.
"""

import getpass
import os
import re
import shutil
from pathlib import Path

from gpulesson.classroom.charges import sessions as workshop_sessions
from gpulesson.classroom.check.login import CONFIG
from gpulesson.classroom.check.report import fail, ok, run, skip

CLASS_SIZE = 25  # learners at once when lesson_site gives no class_size
GPU = re.compile(r"gres/gpu(?::[\w.-]+)?=(\d+)")


def minutes(value: str) -> float | None:
    """Slurm's time (``MM``, ``MM:SS``, ``HH:MM:SS``, ``D-HH[:MM[:SS]]``) in minutes; None for no
    limit (``UNLIMITED``, ``INFINITE``, empty)."""
    value = (value or "").strip()
    if not value or value.upper() in ("UNLIMITED", "INFINITE", "NONE"):
        return None
    days, _, rest = value.rpartition("-")
    parts = [int(p) for p in rest.split(":")]
    if days:  # D-HH, D-HH:MM, D-HH:MM:SS
        hours, mins, secs = [*parts, 0, 0][:3]
        return int(days) * 1440 + hours * 60 + mins + secs / 60
    if len(parts) == 3:
        return parts[0] * 60 + parts[1] + parts[2] / 60
    return parts[0] + (parts[1] / 60 if len(parts) == 2 else 0)


def gpus(tres: str) -> int | None:
    """The GPUs in a TRES list (``cpu=8,gres/gpu=4``), summed over GPU types; None for none."""
    found = [int(n) for n in GPU.findall(tres or "")]
    return sum(found) if found else None


def _run(*command: str) -> str | None:
    """The command's output; None when it is not there, fails or does not answer."""
    result = run(*command)
    return result.stdout if result and result.returncode == 0 else None


def partition(name: str) -> dict | None:
    """``scontrol show partition NAME`` as a dict (None when Slurm does not answer)."""
    out = _run("scontrol", "show", "partition", name, "--oneliner")
    if not out or "=" not in out:
        return None
    return dict(field.split("=", 1) for field in out.split() if "=" in field)


def accounting(what: str, *where: str, fields: str) -> list[dict] | None:
    """``sacctmgr show WHAT WHERE... format=FIELDS`` as one dict a row (None: no accounting)."""
    out = _run("sacctmgr", "--noheader", "--parsable2", "show", what, *where, f"format={fields}")
    if out is None:
        return None
    names = fields.split(",")
    return [dict(zip(names, line.split("|"), strict=False)) for line in out.splitlines() if line]


def _too_small(limits: dict, session: dict, learners: int, where: str) -> list[str]:
    """The limits of one QOS or association row that a session does not fit."""
    hours, wanted = float(session.get("hours", 0)), int(session.get("gpus", 0))
    label = session.get("label", "session")
    found = []
    wall = minutes(limits.get("MaxWall", ""))
    if wall is not None and wall < hours * 60:
        found.append(f"{where} MaxWall {limits['MaxWall']} < the {label}'s {hours:g} h")
    for key, need, who in (("MaxTRESPU", wanted, "per user"), ("MaxTRES", wanted, "per job"),
                           ("GrpTRES", wanted * learners, f"for {learners} learners")):
        cap = gpus(limits.get(key, ""))
        if wanted and cap is not None and cap < need:
            found.append(f"{where} {key} allows {cap} GPU(s) {who}, the {label} needs {need}")
    return found


def class_size(site: dict) -> tuple[int, str]:
    """The learners at once, and in words, saying where no class_size gives it."""
    learners = int(site.get("class_size") or CLASS_SIZE)
    return learners, f"{learners} learners" + ("" if site.get("class_size") else
                                               ", no class_size in the site values")


def check_limits(site: dict, config: Path = CONFIG) -> list:
    """Two items: the partitions' MaxTime, and the QOS and account limits, against the sessions."""
    sessions = workshop_sessions(config)
    learners, _ = class_size(site)
    problems, qos_names, read = [], set(), []
    for session in sessions:
        name = str(site.get(f"{session.get('partition', 'cpu')}_partition") or "")
        found = partition(name) if name else None
        if found is None:
            continue
        read.append(name)
        limit = minutes(found.get("MaxTime", ""))
        if limit is not None and limit < float(session.get("hours", 0)) * 60:
            problems.append(f"partition {name}'s MaxTime {found['MaxTime']} < the "
                            f"{session.get('label')}'s {session.get('hours')} h")
        if found.get("QoS", "N/A") not in ("N/A", ""):
            qos_names.add(found["QoS"])
    title = "Time limits of the partitions"
    if not read:
        items = [skip(title, "Slurm does not answer here (scontrol show partition)")]
    elif problems:
        items = [fail(title, "; ".join(problems), "shorten the sessions' hours in lesson_schedule "
                      "of _config.yml, or ask your site for a reservation that allows them")]
    else:
        items = [ok(title, f"{', '.join(sorted(set(read)))} allow each session's hours")]
    items.append(_accounting_item(site, sessions, learners, sorted(qos_names)))
    return [*items, members_item(site), quota_item(site)]


def _accounting_item(site: dict, sessions: list[dict], learners: int, qos_names: list[str]):
    title = f"QOS and account limits ({class_size(site)[1]})"
    rows = []
    qos = accounting("qos", *([f"names={','.join(qos_names)}"] if qos_names else []),
                     fields="Name,MaxWall,MaxTRESPU,MaxTRES,GrpTRES")
    if qos is None:
        return skip(title, "no Slurm accounting here (sacctmgr): ask your site for the QOS and "
                           "account limits on hours and GPUs")
    rows += [(f"QOS {row.get('Name')}", row) for row in qos]
    account = str(site.get("account") or "").strip()
    if account:
        assoc = accounting("assoc", f"where account={account}",
                           fields="Account,User,MaxWall,MaxTRES,GrpTRES") or []
        # the account's own row; its users' rows are members_item's
        rows += [(f"account {account}", row) for row in assoc if not row.get("User")]
    problems = [p for where, row in rows for s in sessions for p in _too_small(row, s, learners, where)]
    if problems:
        return fail(title, "; ".join(problems), "ask your site to raise these limits for the "
                    "workshop (or for a reservation), or plan fewer learners per GPU session")
    return ok(title, f"{len(rows)} QOS and account row(s) allow every session for {learners} "
                     "learners")


ASK_SITE = ("ask your site to add every learner's user to the account {account} with at least 1 "
            "GPU each and {learners} GPUs for the account (send them the learners' user names)")


def members_item(site: dict):
    """The learners' associations in the workshop's account (without one, or with a GPU limit of
    0, a learner cannot start the GPU session)."""
    learners, size = class_size(site)
    account = str(site.get("account") or "").strip()
    title = "Learners in the Slurm account"
    ask = ASK_SITE.format(account=account or "of the workshop", learners=learners)
    if not account:
        return skip(title, f"no account in the site values: {ask}")
    rows = accounting("assoc", f"account={account}", fields="User,GrpTRES,MaxTRES,MaxJobs")
    if rows is None:
        return skip(title, f"no Slurm accounting here (sacctmgr): {ask}")
    me = os.environ.get("USER", "")
    users = [r for r in rows if r.get("User")]
    if not [u for u in users if u["User"] != me]:
        return skip(title, f"sacctmgr shows no user of {account} but you (the site may hide "
                           f"others' associations): {ask}")
    problems = []  # the account's own GrpTRES against the class: _accounting_item
    for row in users:
        caps = [c for c in (gpus(row.get("GrpTRES", "")), gpus(row.get("MaxTRES", ""))) if c is not None]
        if caps and min(caps) < 1:
            problems.append(f"user {row['User']} may hold {min(caps)} GPUs")
        if row.get("MaxJobs", "").strip() == "0":
            problems.append(f"user {row['User']} may run no job (MaxJobs=0)")
    limits_seen = sorted({f"{k} gres/gpu={gpus(r[k])}" for r in users for k in ("GrpTRES", "MaxTRES")
                          if gpus(r.get(k, "")) is not None})
    detail = (f"{len(users)} user(s) in {account} for {size}, per-user GPU limits: "
              f"{', '.join(limits_seen) or 'none'}; compare with the learners' user names")
    if problems:
        return fail(title, f"{'; '.join(problems)} ({detail})", ask)
    return ok(title, detail)


# --- inside the job and in the learner's kernel ------------------------------------------------

CUDA_LIBRARY = re.compile(r"cuda|cudnn|nvhpc", re.I)


def module_item(environ):
    """No CUDA module loaded at login, whose libraries could shadow those of the environment."""
    title = "No CUDA module loaded"
    paths = [p for p in environ.get("LD_LIBRARY_PATH", "").split(":") if CUDA_LIBRARY.search(p)]
    modules = [m for m in environ.get("LOADEDMODULES", "").split(":") if CUDA_LIBRARY.search(m)]
    if not paths and not modules:
        return ok(title, "LD_LIBRARY_PATH holds no CUDA folder")
    found = ", ".join(modules + paths)
    return fail(title, f"{found}: a CUDA module loaded at login can clash with the CUDA libraries "
                "of the lesson's environment", "run module purge before activating the "
                "environment (the Open OnDemand app's job does); ask your site not to load a CUDA "
                "module at login, or remove it from your ~/.bashrc")


def partition_item(site: dict, environ):
    """The GPU session's job runs on the GPU partition (not left on the CPU one)."""
    title = "Partition this job runs on"  # not the login side's "Job on the GPU partition"
    wanted, got = str(site.get("gpu_partition") or ""), environ.get("SLURM_JOB_PARTITION", "")
    if not got:
        return skip(title, "not in a Slurm job")
    if got.split(",")[0] == wanted:
        return ok(title, got)
    return fail(title, f"the job runs on the partition {got}, not {wanted}", "start the GPU "
                "session from the session menu again and check its partition; if Slurm moves it, "
                "ask your site why")


def home_item(settings):
    """Space in the home folder (under the quota, else free) for the data and the work files."""
    title = "Space in your home folder"
    home = Path.home()
    need, parts = learner_need(Path(settings.hdf5_path).is_file(), environment=False)
    row, source = read_quota(home)
    room = left_gb(row) if row else None
    if room is not None:
        detail = f"{room[0]:.1f} GB left under your quota ({source})"
    else:
        try:
            free = shutil.disk_usage(home).free / 1e9
        except OSError as exc:
            return skip(title, f"cannot read the free space of {home} ({exc.strerror})")
        room = (free, None)
        detail = f"{free:.1f} GB free in {home}"
    detail += f", the lesson needs about {need:.1f} GB more ({parts})"
    if room[0] < need:
        return fail(title, detail, f"{FREE_UP}, or ask your site for more quota")
    if row is None:
        detail += f" (free space, not a quota: {BY_HAND})"
    return ok(title, detail)


# --- the home folder's quota -------------------------------------------------------------

# What a learner's home holds (GB): the conda environment with its CUDA libraries (guide.md), pip's
# cache (an allowance, not measured), the data (unless pre-staged), the work files and models.
ENV_GB, PIP_CACHE_GB, DATA_GB, WORK_GB = 5.0, 1.0, 0.7, 0.3
BY_HAND = "check it by hand with quota -s (or lfs quota -h -u $USER on Lustre), or ask your site"
SIZE = re.compile(r"^(\d+(?:\.\d+)?)([kmgtp]?)b?\*?$", re.I)
POWERS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}


def size_gb(value: str, bare_unit: str = "k") -> float | None:
    """A size as quota and lfs print it (``4096M``, ``12000M*``; bare: ``bare_unit``) in GB, or None."""
    match = SIZE.match(value.strip())
    if not match:
        return None
    unit = (match.group(2) or bare_unit).lower()
    return float(match.group(1)) * 1024 ** POWERS[unit] / 1e9


def parse_quota(text: str) -> list[dict]:
    """The rows of ``quota -s -w`` or ``lfs quota -h``: filesystem, used, soft and hard limit in
    GB (0: no limit); a name alone on its line (lfs wraps long ones) joins the next."""
    rows, pending = [], None
    for line in text.splitlines():
        fields = line.split()
        if not fields or fields[0] in ("Disk", "Filesystem") or line.rstrip().endswith(":"):
            continue
        if len(fields) == 1:
            pending = fields[0]
            continue
        if pending:
            fields, pending = [pending, *fields], None
        sizes = [size_gb(value) for value in fields[1:4]]
        if len(fields) >= 4 and None not in sizes:
            rows.append({"filesystem": fields[0], "used": sizes[0], "soft": sizes[1],
                         "hard": sizes[2]})
    return rows


def _mount(path: Path) -> tuple[str, str, str]:
    """The device, mount point and type of the file system holding ``path`` (from /proc/mounts)."""
    best = ("", "/", "")
    try:
        lines = Path("/proc/mounts").read_text(encoding="utf-8").splitlines()
    except OSError:
        return best
    real = str(path.resolve())
    for line in lines:
        device, target, kind = [*line.split(), "", "", ""][:3]
        if (real == target or real.startswith(target.rstrip("/") + "/")) and len(target) >= len(best[1]):
            best = (device, target, kind)
    return best


def read_quota(home: Path | None = None) -> tuple[dict, str] | tuple[None, str]:
    """The home folder's quota row and the command that gave it; (None, why) without one."""
    home = home or Path.home()
    device, target, kind = _mount(home)
    user = os.environ.get("USER") or getpass.getuser()
    if kind == "lustre" or (shutil.which("lfs") and shutil.which("quota") is None):
        command = ("lfs", "quota", "-h", "-u", user, target)
    else:
        command = ("quota", "-s", "-w")
    # Its output, whatever its exit status (quota exits 1 when over the quota).
    result = run(*command, timeout=30)
    rows = parse_quota(result.stdout) if result else []
    if not rows:
        tools = " or ".join(sorted({command[0], "quota"}))
        return None, f"no quota for {home} from {tools} (none set, or the tool is not here)"
    mine = [r for r in rows if r["filesystem"] in (device, target)] or (rows if len(rows) == 1 else [])
    if not mine:
        return None, f"{' '.join(command)} lists no row for {home}'s file system ({device or target})"
    return mine[0], " ".join(command[:3] if command[0] == "quota" else command[:2])


def left_gb(row: dict) -> tuple[float, float] | None:
    """The space left under the quota and the limit (the soft one where set); None: no limit."""
    limit = row["soft"] or row["hard"]
    return (max(limit - row["used"], 0.0), limit) if limit else None


FREE_UP = "free space in your home folder (pip cache purge; conda clean --all)"


def learner_need(prepared_data: bool, environment: bool = True) -> tuple[float, str]:
    """What one learner's home needs (GB) and its parts, in words."""
    parts = ([("environment", ENV_GB), ("pip cache", PIP_CACHE_GB)] if environment else [])
    parts += [] if prepared_data else [("data", DATA_GB)]
    parts += [("work files", WORK_GB)]
    return sum(gb for _, gb in parts), " + ".join(f"{gb:g} GB {name}" for name, gb in parts)


def quota_item(site: dict, home: Path | None = None):
    """The instructor's check: does a home under this quota hold what a learner puts there?"""
    prepared = bool(str(site.get("data_dir") or "").strip())
    need, parts = learner_need(prepared)
    title = "Home folder quota"
    row, source = read_quota(home)
    if row is None:
        return skip(title, f"{source}; a learner needs about {need:.1f} GB ({parts}): {BY_HAND}")
    room = left_gb(row)
    if room is None:
        return ok(title, f"{source}: no limit on {row['filesystem']}")
    left, limit = room
    detail = (f"{source}: {left:.1f} GB left of {limit:.1f} GB on {row['filesystem']}, a learner "
              f"needs about {need:.1f} GB ({parts})")
    if limit < need or left < need:
        return fail(title, detail, f"ask your site for {need:.0f} GB of home quota per learner, "
                    "or for a project folder for the environments; " + FREE_UP)
    return ok(title, detail + " (learners' quotas may differ: the self-check reads each)")
