"""The job part's checklist on a GPU node, kept as a record for the instructor's guide:
``--inside-job --record results/check-gpu.jsonl`` appends it (home folder as ``~``, no host name).
"""

from dataclasses import asdict
from pathlib import Path

from gpulesson.classroom.check.report import Item, all_passed, items_from_json, text
from gpulesson.machine.pinned import LESSON_ROOT, environment_note, pinned_environment, same_version
from gpulesson.records import results

EXPERIMENT = "check-gpu"  # results/check-gpu.jsonl
RESULTS_FILE = results.RESULTS_DIR / f"{EXPERIMENT}.jsonl"


def check_record(items: list[Item], settings, gpus: list[str], driver: str | None,
                 environment: dict | None = None) -> dict:
    """A compute node's checklist as a record, ``gpus`` and ``driver`` as ``nvidia-smi`` gave them."""
    home = str(Path.home())
    public = [{key: value.replace(home, "~") if isinstance(value, str) and home != "/" else value
               for key, value in asdict(item).items()} for item in items]
    return results.make_record(EXPERIMENT, data=settings.data, environment=environment,
                               device_kind="gpu" if gpus else "cpu", quick=settings.quick,
                               nvidia_smi={"gpus": gpus, "driver": driver},
                               passed=all_passed(items), items=public)


def append_check(path, items: list[Item], settings) -> Path:
    """Append this node's checklist ``items`` to the results file ``path``."""
    from gpulesson.classroom.check.job import nvidia_smi

    _, driver, gpus = nvidia_smi()
    return results.append_record(path, check_record(items, settings, gpus, driver))


def title(record: dict) -> str:
    """'1 × NVIDIA H100 80GB HBM3, driver 550.54.15, on 2026-12-01 (Keras 3.15.1, jax 0.6.2)'."""
    gpus = record["nvidia_smi"]["gpus"]
    return (f"{len(gpus)} × {gpus[0]}, driver {record['nvidia_smi']['driver']}, on "
            f"{record['date'][:10]} ({results.software(record)})")


BACKEND_ITEM = "GPU in Keras ("  # an item per installed Keras backend: "GPU in Keras (JAX)"


def environment(record: dict, root: Path) -> str:
    """Which environment the check ran in, the Keras backends found, and the driver the pinned builds need."""
    pins = pinned_environment(root)
    backends = [item["name"][len(BACKEND_ITEM):-1] for item in record.get("items", [])
                if item["name"].startswith(BACKEND_ITEM)]
    found = (f" It found the Keras backend{'s' if len(backends) > 1 else ''} "
             f"{' and '.join(backends)}" if backends else "")
    if found and "TensorFlow" not in backends and pins.get("tensorflow"):
        found += f", and no TensorFlow (the lesson pins {pins['tensorflow']})"
    cuda = str((record.get("gpu") or {}).get("cuda_runtime_version") or "")
    driver = ""
    if cuda and pins.get("cuda") and not same_version(cuda.split(".")[0], pins["cuda"]):
        from gpulesson.machine.driver import MINIMUM_DRIVER

        own, pinned = (MINIMUM_DRIVER.get(int(v)) for v in (cuda.split(".")[0], pins["cuda"]))
        driver = (f" Its driver item holds for CUDA {cuda}, which needs driver {own} or newer; "
                  f"the lesson's pinned TensorFlow and JAX are built for CUDA {pins['cuda']} "
                  f"and need driver {pinned} or newer (the setup page).")
    return environment_note(record, "The check", root) + (found + "." if found else "") + driver


def substitutions(path=RESULTS_FILE) -> dict[str, str]:
    """``ref_check_gpu``, ``ref_check_gpu_title`` and ``ref_check_gpu_environment`` of the
    newest record with a GPU."""
    path = Path(path)
    root = path.resolve().parent.parent  # the lesson's folder; else this checkout
    root = root if (root / "_config.yml").is_file() else LESSON_ROOT
    records = [r for r in results.read_records(path, experiment=EXPERIMENT) if results.is_gpu(r)] \
        if path.is_file() else []
    if not records:
        return {"ref_check_gpu": results.NOT_RECORDED, "ref_check_gpu_title": results.NOT_RECORDED,
                "ref_check_gpu_environment": results.NOT_RECORDED}
    newest = records[-1]
    return {"ref_check_gpu": text(items_from_json(newest)), "ref_check_gpu_title": title(newest),
            "ref_check_gpu_environment": environment(newest, root)}
