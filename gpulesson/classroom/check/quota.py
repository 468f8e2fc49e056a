"""The home folder's quota, which often allows less than the file system's free space."""

from __future__ import annotations

import getpass
import os
import re
import shutil
import subprocess
from pathlib import Path

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


def parse(text: str) -> list[dict]:
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


def _answer(*command: str) -> str | None:
    """A quota tool's output, whatever its exit status (quota exits 1 when over the quota)."""
    if shutil.which(command[0]) is None:
        return None
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
    except (subprocess.TimeoutExpired, OSError):
        return None
    return result.stdout if parse(result.stdout) else None


def read_quota(home: Path | None = None) -> tuple[dict, str] | tuple[None, str]:
    """The home folder's quota row and the command that gave it; (None, why) without one."""
    home = home or Path.home()
    device, target, kind = _mount(home)
    user = os.environ.get("USER") or getpass.getuser()
    if kind == "lustre" or (shutil.which("lfs") and shutil.which("quota") is None):
        command = ("lfs", "quota", "-h", "-u", user, target)
    else:
        command = ("quota", "-s", "-w")
    out = _answer(*command)
    if out is None:
        tools = " or ".join(sorted({command[0], "quota"}))
        return None, f"no quota for {home} from {tools} (none set, or the tool is not here)"
    rows = parse(out)
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
    from gpulesson.classroom.check.report import fail, ok, skip

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
