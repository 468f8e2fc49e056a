"""The lesson's pinned environment, against the versions a record was made with (pages say which,
from the record and the pin files, never typed)."""

import re
from pathlib import Path

LESSON_ROOT = Path(__file__).resolve().parents[2]
# The packages a record's "versions" may hold, in the order a page names them.
TITLES = {"python": "Python", "keras": "Keras", "tensorflow": "TensorFlow", "jax": "JAX",
          "torch": "PyTorch"}
# Where each pin is: (file, pattern); "cuda" is the CUDA major version of the JAX build.
PINS = {
    "python": ("environment.yml", r"^\s*-\s*python=(\S+)"),
    "keras": ("environment.yml", r"^\s*-\s*keras==(\S+)"),
    "tensorflow": ("environment.yml", r"^\s*-\s*tensorflow(?:\[[^]]*\])?==(\S+)"),
    "jax": ("environment.yml", r"^\s*-\s*jax(?:\[[^]]*\])?==(\S+)"),
    "cuda": ("environment.yml", r"^\s*-\s*jax\[cuda(\d+)\]=="),
    "torch": ("requirements/torch.txt", r"^torch==(\S+)"),
}


def pinned_environment(root: Path = LESSON_ROOT) -> dict[str, str]:
    """The versions of :data:`PINS` as the lesson's files pin them (those they lack left out)."""
    found = {}
    for key, (name, pattern) in PINS.items():
        try:
            match = re.search(pattern, (Path(root) / name).read_text(encoding="utf-8"), re.M)
        except OSError:
            match = None
        if match:
            found[key] = match[1]
    return found


def same_version(installed: str, pinned: str) -> bool:
    """Whether ``installed`` is the pin: "3.11.7" is "3.11", "2.15.0+cu132" is "2.15.0"."""
    parts = str(installed).split("+")[0].split(".")
    wanted = str(pinned).split(".")
    return parts[:len(wanted)] == wanted


def environment_note(record: dict, what: str, root: Path = LESSON_ROOT) -> str:
    """One sentence: whether ``what`` ran in the pinned environment or the node's own, with the versions."""
    versions = record.get("versions") or {}
    pins = pinned_environment(root)
    names = [key for key in TITLES if versions.get(key)]
    cuda = (record.get("gpu") or {}).get("cuda_runtime_version")
    own = ", ".join(f"{TITLES[key]} {versions[key]}" for key in names) + (
        f", CUDA {cuda}" if cuda else "")
    differ = [key for key in names if key in pins and not same_version(versions[key], pins[key])]
    if not differ:
        return f"{what} ran in the lesson's pinned environment ({own})."
    pinned = ", ".join(f"{TITLES[key]} {pins[key]}" for key in names if key in pins)
    return (f"{what} ran in the node's own Python environment, not the lesson's pinned one: "
            f"{own}, where the lesson pins {pinned}.")
