"""What the login node can check: the kernel and its packages, the prepared data and the class
folder (the site values and the Open OnDemand app: :mod:`gpulesson.classroom.check.site`)."""

import json
import os
import re
import shutil
import stat
from pathlib import Path

from gpulesson.classroom.check.report import Item, fail, ok, run, skip

ROOT = Path(__file__).resolve().parents[3]
CONFIG = ROOT / "_config.yml"
KERNEL = "gpulesson"  # the Makefile's KERNEL: the kernel "Python (gpulesson)"
# The Makefile's kernel target registers the kernel's settings; read from there, not repeated.
KERNEL_ENV_SOURCE = ROOT / "Makefile"
# The settings that matter on a GPU: no preallocation of its memory (JAX, TensorFlow), so that
# a second kernel or job on a shared GPU does not fail. The values: the Makefile's.
GPU_SETTINGS = ("XLA_PYTHON_CLIENT_PREALLOCATE", "TF_FORCE_GPU_ALLOW_GROWTH")


def site_values(config: Path = CONFIG) -> dict:
    import yaml  # here: a GPU node's recording imports this module for kernel_env_expected

    return yaml.safe_load(Path(config).read_text(encoding="utf-8")).get("lesson_site") or {}


def kernel_env_expected(makefile: Path = KERNEL_ENV_SOURCE) -> dict[str, str]:
    """The settings the Makefile's kernel target gives the kernel (``--env NAME VALUE``)."""
    try:
        return dict(re.findall(r"--env (\S+) (\S+)", makefile.read_text(encoding="utf-8")))
    except OSError:
        return {}


def register_fix(name: str = KERNEL, config: Path = CONFIG) -> str:
    """How to register the kernel: on a cluster from the site's conda environment (not ``make
    kernel``, whose .venv has the CPU-only TensorFlow)."""
    try:
        env = str(site_values(config).get("conda_env") or "").strip() or "gpulesson"
    except (OSError, ValueError, AttributeError):
        env = "gpulesson"
    settings = " ".join(f"--env {key} {value}" for key, value in kernel_env_expected().items())
    return (f"register it from the lesson's environment: on a cluster, conda activate {env}, then "
            f'python -m ipykernel install --user --name {name} --display-name "Python ({name})" '
            f"{settings} (the setup page's command); on a laptop, make kernel")


# --- the kernel and its packages -------------------------------------------------------------

def kernel_dirs() -> list[Path]:
    """Where Jupyter looks for kernels, first found first (JUPYTER_PATH, user, environment, system)."""
    from jupyter_core.paths import jupyter_path  # the lesson's environment has it (jupyterlab)

    return [Path(p) for p in jupyter_path("kernels")]


def find_kernel(name: str = KERNEL) -> tuple[Path | None, dict]:
    """The kernel spec file ``name`` and its contents, as Jupyter would find it."""
    for folder in kernel_dirs():
        spec = folder / name / "kernel.json"
        if spec.is_file():
            try:
                return spec, json.loads(spec.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return spec, {}
    return None, {}


def pinned_packages(requirements: Path = ROOT / "requirements") -> dict[str, tuple[str, ...]]:
    """``{name: (pinned version, distribution names that may carry it)}`` of common.txt and
    TensorFlow (cpu.txt)."""
    pins: dict[str, tuple[str, tuple[str, ...]]] = {}
    for line in (requirements / "common.txt").read_text().splitlines():
        match = re.match(r"^([A-Za-z0-9_.-]+)(?:\[[^]]*\])?==(\S+)", line.strip())
        if match:
            pins[match[1].lower()] = (match[2], (match[1].lower(),))
    tf = re.search(r"^tensorflow\S*==(\S+)", (requirements / "cpu.txt").read_text(), re.M)
    if tf:
        pins["tensorflow"] = (tf[1], ("tensorflow", "tensorflow-cpu"))
    return {name: (version, *names) for name, (version, names) in pins.items()}


PROBE = ("import importlib.metadata as m, json, sys\n"
         "out = {}\n"
         "for name in sys.argv[1:]:\n"
         "    try: out[name] = m.version(name)\n"
         "    except m.PackageNotFoundError: out[name] = None\n"
         "print(json.dumps(out))\n")


def installed_versions(python: str, names) -> dict[str, str | None]:
    result = run(python, "-c", PROBE, *names)
    if result is None or result.returncode != 0:
        said = result.stderr.strip().splitlines() if result else ["no answer in 60 s"]
        raise OSError(said[-1] if said else f"exit status {result.returncode}")
    return json.loads(result.stdout)


def check_kernel(name: str = KERNEL):
    """(items, kernel's Python or None, kernel's env): the kernel is registered, its Python has
    the pinned packages, and it has the Makefile's settings."""
    spec_path, spec = find_kernel(name)
    title = f'Kernel "Python ({name})"'
    register = register_fix(name)
    if spec_path is None:
        return [fail(title, "not registered", register)], None, {}
    python = (spec.get("argv") or [""])[0]
    env = {k: str(v) for k, v in (spec.get("env") or {}).items()}
    if not python or shutil.which(python) is None:
        return [fail(title, f"{spec_path} starts {python!r}, which is not there", register)], None, env
    python = shutil.which(python)
    items = [ok(title, f"{spec_path} → {python}"), check_packages(python),
             check_settings(env, register)]
    return items, python, env


def check_packages(python: str) -> Item:
    """The lesson's pinned packages, same versions, in the Python ``python``."""
    pins = pinned_packages()
    names = [n for version, *alternatives in pins.values() for n in alternatives]
    fix = (f"install the lesson's pins into that Python: {python} -m pip install "
           f"-r requirements/lab.txt -c requirements/constraints.txt")
    try:
        found = installed_versions(python, names)
    except (OSError, ValueError) as exc:
        return fail("Kernel's packages", f"{python} did not answer ({exc})", fix)
    missing, wrong = [], []
    for key, (version, *alternatives) in pins.items():
        have = next((found[n] for n in alternatives if found.get(n)), None)
        if have is None:
            missing.append(f"{key}=={version}")
        elif have != version:
            wrong.append(f"{key} {have} (pinned {version})")
    if missing or wrong:
        detail = "; ".join(filter(None, [missing and f"missing {', '.join(missing)}",
                                         wrong and f"other versions: {', '.join(wrong)}"]))
        return fail("Kernel's packages", detail, fix)
    return ok("Kernel's packages", f"the {len(pins)} pinned packages of requirements/common.txt "
                                   "and TensorFlow, same versions")


def check_settings(env, fix: str, names=None) -> Item:
    """The kernel's ``env`` has the settings of the Makefile's kernel target (or those ``names``)."""
    expected = {k: v for k, v in kernel_env_expected().items() if names is None or k in names}
    off = {k: v for k, v in expected.items() if env.get(k) != v}
    if off:
        return fail("Kernel's settings", "not as the Makefile's kernel target sets them: "
                    + ", ".join(f"{k}={v} (found {env.get(k) or 'not set'})" for k, v in off.items()), fix)
    return ok("Kernel's settings", ", ".join(f"{k}={v}" for k, v in expected.items()))


# --- files and folders others must read or write ---------------------------------------------

def first_sentence(exc) -> str:
    """The first sentence of an error's message: what is wrong (the fix is given apart)."""
    return str(exc).splitlines()[0].split(". ")[0].rstrip(".:")


def _closed_parent(path: Path, title: str) -> list[Item]:
    """A failed item for the first folder above ``path`` that other users cannot enter (no o+x)."""
    closed = [p for p in Path(path).resolve().parents if not p.stat().st_mode & stat.S_IXOTH]
    return [fail(title, f"other users cannot enter {closed[0]}", f"chmod o+x {closed[0]}")] \
        if closed else []


def check_data(settings, *, shared: bool = True, learner: bool = False):
    """The prepared data file: valid and (``shared``) readable by others; for a ``learner``, missing fails."""
    from gpulesson.datasets.hdf5 import validate_hdf5
    from gpulesson.errors import DataFileError

    path, title = Path(settings.hdf5_path), f"Data file ({settings.label})"
    if not path.exists() and learner:
        existing = next(p for p in (path.parent, *path.parents) if p.exists())
        if os.access(existing, os.W_OK | os.X_OK):  # the learner may create the data folder
            return [fail(title, f"{path} is not there: it has not been prepared",
                         "run the cell below that calls prepare(settings), then the check again "
                         + ("(it makes the synthetic stand-in)" if settings.is_synthetic else
                            "(it downloads CIFAR-10 once; on a node without internet, ask your "
                            "instructor for the shared data folder)"))]
        return [fail(title, f"{path} is not there and {path.parent} is not yours to write",
                     "ask your instructor for the shared data folder and set it in the first "
                     "cell: %env LESSON_DATA_DIR=/path/to/shared/gpulesson-data")]
    if not path.exists() and settings.is_synthetic and not shared:
        return [ok(title, f"the synthetic stand-in, made at the first use in {path.parent}")]
    if not os.access(path, os.R_OK) and path.exists():
        return [fail(title, f"you cannot read {path}", f"ask its owner: chmod a+r {path}")]
    try:
        info = validate_hdf5(path)
    except DataFileError as exc:
        return [fail(title, first_sentence(exc), f"prepare it: {settings.prepare_command()}"
                     + ("" if settings.is_synthetic else " (or choose LESSON_DATA=synthetic)"))]
    detail = f"{path}, {info.n_train:,} training images"
    if not shared:
        return [ok(title, detail)]
    if not path.stat().st_mode & stat.S_IROTH:
        return [fail(title, f"{path} is not readable by other users", f"chmod o+r {path}")]
    if closed := _closed_parent(path, title):
        return closed
    if any(h == path.resolve() or h in path.resolve().parents
           for h in (Path.home().resolve(), Path("/home"))):
        detail += " (under a home folder: the job below shows whether compute nodes see it)"
    return [ok(title, detail)]


def check_class_folder(site: dict, data_dir: Path):
    from gpulesson.classroom.share import CLASS_ENV, class_folder

    title = "Class folder"
    folder = class_folder(site.get("class_results"))
    if folder is None:
        return [skip(title, f"class_results is empty and {CLASS_ENV} unset: the class shares no runs")]
    make = f"mkdir -p {folder} && chgrp CLASSGROUP {folder} && chmod 2775 {folder} (or chmod 1777 {folder})"
    if not folder.is_dir():
        return [fail(title, f"{folder} does not exist", make)]
    resolved, data = folder.resolve(), Path(data_dir).expanduser().resolve()
    if resolved == data or data in resolved.parents:
        return [fail(title, f"{folder} is in the data folder {data}, which learners only read",
                     "set class_results in _config.yml to a folder of its own")]
    mode = folder.stat().st_mode
    group_way = mode & stat.S_ISGID and mode & stat.S_IWGRP and mode & stat.S_IXGRP
    world_way = mode & stat.S_ISVTX and mode & stat.S_IWOTH and mode & stat.S_IXOTH
    if not (group_way or world_way):
        return [fail(title, f"{folder} (mode {stat.filemode(mode)}) is not writable by the class's "
                     "group with setgid, nor by everyone with the sticky bit", make)]
    if closed := _closed_parent(folder, title):
        return closed
    how = "group-writable, setgid" if group_way else "writable by all, sticky"
    return [ok(title, f"{folder} ({stat.filemode(mode)}, {how})")]
