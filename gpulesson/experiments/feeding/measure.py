"""Timing ``model.fit`` ("train") and the loader alone ("loader") on each pipeline by the
lesson's rule, one model a device, and the records (``results/feeding.jsonl``). A slow condition
times only the first ``max_steps`` batches of each epoch, never fewer repeats. Keras is imported
only when something is measured.
"""

import contextlib
import tempfile
import time
from functools import partial
from pathlib import Path

from gpulesson.experiments import cli
from gpulesson.machine import allocator, timing
from gpulesson.machine.devices import keras_device_name as check_device
from gpulesson.records import pagewords, summaries
from gpulesson.records.recordset import RecordSet, check_earlier
from gpulesson.records.results import new_run_id
from gpulesson.records.summaries import fmt_number as rate_text

N_IMAGES = 50_000  # the full benchmark, and the size the lesson's goals are stated for
TARGET_SHARE = 0.90  # the lesson's HDF5 pipeline: at least 90 % of the fastest in-memory path
TARGET_EPOCH_SECONDS = 1.0  # and one epoch of 50,000 images in at most 1 s on the GPU
QUICK_N_IMAGES = 1_024
BATCH_SIZE, QUICK_BATCH_SIZE = 256, 64
# The reference's CPU epochs (--cpu-max-steps, --classic-max-steps): the CPU stage in about 6
# minutes on an idle 2-core machine, extrapolated from run 20261123T025717Z-e5fe6a.
REFERENCE_CPU_STEPS = 12
BASE = {"precision": "float32", "jit_compile": True, "steps_per_execution": 1}
LOADER = dict.fromkeys(BASE)  # a loader row has no training setting
PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")

# name -> what it is (for tables, figure labels and records)
PIPELINES: dict[str, str] = {
    "classic": "classic tutorial: chunks=True + gzip, reads all to count (the mistake)",
    "lesson": "lesson generator, batch chunks, uncompressed",
    "lesson-ahead": "lesson generator, uncompressed, reading ahead (read_ahead=True)",
    "lesson-ahead-window1": "lesson generator, uncompressed, reading ahead, window=1",
    "lesson-lzf": "lesson generator, batch chunks + lzf",
    "lesson-gzip": "lesson generator, batch chunks + gzip",
    "lesson-workers": "lesson generator, uncompressed, worker processes",
    "lesson-gzip-workers": "lesson generator, gzip, worker processes",
    "ram": "whole data set in RAM (uint8 array)",
    "device": "whole data set resident on the device",
}
HDF5_PIPELINES = tuple(name for name in PIPELINES if name.startswith("lesson"))
# The data in memory: the fastest of them, on a device, is the reference of the 90 % goal.
IN_MEMORY = ("ram", "device")
# A device's part of a run is complete when these pipelines have both modes.
REQUIRED = ("lesson", "ram", "device")
WORKER_PIPELINES = ("lesson-workers", "lesson-gzip-workers")
# Backends on which Keras' own workers deliver wrong data: batches read ahead before an epoch
# ended are handed out in the next one (Keras 3.15.1; episode 9 shows the code path).
WRONG_DATA_WITH_WORKERS = ("jax", "torch")
# The chunk shapes and the chunk cache (pipelines.time_reading): loader rows of group GROUP,
# which the page's pipelines never read. layout -> (blocks per chunk, compression, cache MiB).
GROUP = "chunks"
CHUNKS = {"chunks of 1 block, uncompressed": (1, None, None),
          "chunks of 4 blocks, uncompressed": (4, None, None),
          "chunks of 4 blocks, lzf": (4, "lzf", None),
          "chunks of 4 blocks, lzf, 64 MiB cache": (4, "lzf", 64)}


def check_pipelines(names, backend: str | None = None) -> list[str]:
    """``names`` checked, without repeats; with ``backend``, refusing those of wrong data there."""
    names = list(names)
    if not names:
        raise ValueError("no pipelines given")
    unknown = [n for n in names if n not in PIPELINES]
    if unknown:
        raise ValueError(f"unknown pipeline(s) {', '.join(map(repr, unknown))}: "
                         f"choose from {', '.join(PIPELINES)}")
    wrong = [n for n in names if n in WORKER_PIPELINES]
    if wrong and backend in WRONG_DATA_WITH_WORKERS:
        raise ValueError(
            f"pipeline(s) {', '.join(map(repr, wrong))} use Keras worker processes, which "
            f"deliver batches of earlier epochs with the {backend} backend: leave them out "
            "(the default), or measure them with KERAS_BACKEND=tensorflow")
    return list(dict.fromkeys(names))


def pipelines_for(backend: str) -> list[str]:
    """Every pipeline that delivers the right data on ``backend`` (the command's default)."""
    wrong = WORKER_PIPELINES if backend in WRONG_DATA_WITH_WORKERS else ()
    return [name for name in PIPELINES if name not in wrong]


def delivered_wrong_data(record: dict) -> bool:
    """Whether ``record`` was read by Keras workers where they deliver earlier epochs' batches."""
    return bool(record.get("workers")) and record.get("backend", "") in WRONG_DATA_WITH_WORKERS


def complete_pipelines(part: list[dict]) -> bool:
    """Whether a device's part of a run has REQUIRED in both modes, and each trained one alone."""
    have = {(r["pipeline"], r["mode"]) for r in part if r.get("group") == "pipelines"}
    trained = {p for p, mode in have if mode == "train"}
    return (all((p, m) in have for p in REQUIRED for m in ("train", "loader"))
            and all((p, "loader") in have for p in trained))


# A condition: what makes a measurement distinct within a run (``--run-id`` skips those it has).
# Records of older settings sweeps (groups other than "pipelines") stay in the file, not shown.
RECORDS = RecordSet("feeding", ("device_kind", "pipeline", "mode", "group", "precision",
                                "jit_compile", "steps_per_execution", "batch_size", "layout"),
                    complete=complete_pipelines, kept=lambda r: r.get("group") == "pipelines",
                    shown=lambda r: not delivered_wrong_data(r) and not RECORDS.predates(r),
                    # pipelines.DEVICE_METHODS' values (that module imports Keras); a `device`
                    # record without one sliced jax.Arrays eagerly, a method no page compares
                    methods=("compiled take", "slice view", "eager slice"),
                    method_applies=lambda r: r.get("pipeline") == "device")


def measurement_record(budget, *, run_id: str, device: str, pipeline: str, mode: str,
                       batch_size: int, steps: int, full_steps: int, n_images: int,
                       precision: str | None, jit_compile: bool | None,
                       steps_per_execution: int | None, group: str, extra: dict) -> dict:
    """One record of ``budget``'s epochs, each ``steps`` of the ``full_steps`` of ``n_images``."""
    images = min(steps * batch_size, n_images)  # an epoch's: its rate is of these
    record = RECORDS.epoch_record(
        budget.seconds, warmup=budget.warmup, run_id=run_id, device=device, n_images=images,
        own={"keras_device": check_device(device), "pipeline": pipeline, "mode": mode, "group": group,
             "pipeline_label": PIPELINES[pipeline], "precision": precision, "jit_compile": jit_compile,
             "steps_per_execution": steps_per_execution, "batch_size": batch_size},
        extra={"n_images": n_images, "steps": steps, "full_epoch_steps": full_steps,  # all images
               "images_per_epoch": images, "partial_epoch": steps < full_steps,
               pagewords.ORDER_FIELD: False, **extra})
    return {**record, "full_epoch_seconds": n_images / record["images_per_second"]}


def short_setting(record) -> str:
    """A record's setting in the table: "loader", or the base setting's "f32 jit"."""
    return "loader" if record["mode"] == "loader" else "f32 jit"


def rate_summary(record: dict | None) -> dict | None:
    """A record's images per second as a summary of the images its epochs timed."""
    summary = RECORDS.epoch_summary(record)
    return summaries.as_rate(summary, record["images_per_epoch"]) if summary else None


def find(records, device: str, pipeline: str, mode: str = "train") -> dict | None:
    """The shown record of ``pipeline`` on ``device`` in ``mode``, training in the base setting."""
    return RECORDS.find(records, device_kind=device, mode=mode, pipeline=pipeline,
                        group="pipelines", **(BASE if mode == "train" else {}))


def trained(records, device: str, names=PIPELINES) -> dict[str, dict]:
    """Pipeline -> its shown training record on ``device``, in the order of :data:`PIPELINES`."""
    return {name: found for name in names if (found := find(records, device, name))}


def fastest_in_memory(records, device: str, names=IN_MEMORY) -> dict | None:
    """The training record of the highest median rate from memory (or of ``names``) on ``device``."""
    found = trained(records, device, names).values()
    return max(found, key=lambda r: rate_summary(r)["median"]) if found else None


def best_pipeline(records, device: str) -> str | None:
    """The pipeline with the highest median training rate (a choice, not a ranking)."""
    best = fastest_in_memory(records, device, PIPELINES)
    return best and best["pipeline"]


def targets(records) -> dict | None:
    """The lesson's goals checked on the GPU: the fastest HDF5 pipeline's share of the fastest
    path from memory, and its time for an epoch of all images; None without both."""
    lesson, top = fastest_in_memory(records, "gpu", HDF5_PIPELINES), fastest_in_memory(records, "gpu")
    if lesson is None or top is None:
        return None
    share, epoch = lesson["images_per_second"] / top["images_per_second"], lesson["full_epoch_seconds"]
    return {"pipeline": lesson["pipeline"], "reference": top["pipeline"], "share": share,
            "share_ok": share >= TARGET_SHARE, "epoch_seconds": epoch,
            "epoch_ok": epoch <= TARGET_EPOCH_SECONDS, "full_size": lesson["n_images"] >= N_IMAGES,
            "record": lesson}


def basis(*rates) -> str:
    """Which repeats the rule compared: "middle three of five epochs", or "all epochs"."""
    note = pagewords.middle_note(*rates)
    return "all epochs" if note.startswith("all ") else note


def why_unclear(*rates, many: bool = False) -> str:
    """Why the rule cannot tell ``rates`` apart (``many``: said of several pairs)."""
    least = min(s["n"] for s in rates)
    if least < summaries.MIN_RANKED:
        who = "some were" if many else "one of them was"
        return f"{who} timed once, with no range" if least == 1 else "too few timed repeats"
    said = basis(*rates)
    return "their ranges overlap" if said.startswith("all ") else f"the ranges of their {said} overlap"


def fastest_text(records, device: str, quote=lambda name: f"`{name}`") -> str:
    """The first place of the rule's ranking of the training rates on ``device``, in its words
    (several: that it cannot tell them apart)."""
    rates = {name: summaries.middle(rate_summary(r)) for name, r in trained(records, device).items()}
    if not rates:
        return "not measured"
    first = summaries.rank(rates, higher_is_better=True)[0]
    if len(first) == 1:
        return quote(first[0])
    chosen = [rate_summary(find(records, device, n)) for n in first]
    why = (why_unclear(*chosen, many=True) if min(r["n"] for r in chosen) < summaries.MIN_RANKED
           else basis(*chosen))
    return (f"{pagewords.listed(map(quote, first))} ({summaries.NO_DIFFERENCE} from {quote(first[0])}, "
            f"the highest median; {why})")


def _keras():
    import keras

    return keras


def _batches(dataset):
    """One epoch of ``dataset`` as ``fit`` fetches it: through Keras' own adapter, with its
    worker threads or processes when it has any."""
    from keras.src.trainers.data_adapters.py_dataset_adapter import PyDatasetAdapter

    adapter = PyDatasetAdapter(dataset, shuffle=False)
    adapter.on_epoch_begin()
    try:
        if adapter.enqueuer is None:
            for index in range(len(dataset)):
                yield dataset[index]
        else:
            yield from adapter._get_iterator()
    finally:
        adapter.on_epoch_end()


def time_loader(dataset, keras_device: str, *, warmup: int = summaries.WARMUP,
                repeats: int = summaries.REPEATS) -> timing.Budget:
    """Epochs of ``dataset`` without a model: each batch converted to a tensor on
    ``keras_device``, as the model receives it; the clock stops once the last one is there
    (one of its elements fetched to the host)."""
    keras = _keras()
    budget = timing.Budget(warmup, repeats)
    while not budget.done():
        start = time.perf_counter()
        for batch in _batches(dataset):
            with keras.device(keras_device):
                last = [keras.ops.convert_to_tensor(a) for a in batch]
        for tensor in last:
            keras.ops.convert_to_numpy(keras.ops.reshape(tensor, (-1,))[:1])
        budget.seconds.append(time.perf_counter() - start)
    return budget


@contextlib.contextmanager
def precision_policy(precision: str):
    """Build layers in ``precision`` inside the block; the previous policy is restored after."""
    keras = _keras()
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}: use one of {', '.join(PRECISIONS)}")
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(precision)
    try:
        yield
    finally:
        keras.mixed_precision.set_global_policy(previous)


def build_model(keras_device: str, *, precision: str = "float32"):
    """The lesson's CNN, compiled as :func:`gpulesson.lesson.compile_cnn` does, with the
    benchmark's setting (:data:`BASE`: XLA, one step a call)."""
    keras = _keras()
    from gpulesson.lesson import build_cnn

    with keras.device(keras_device), precision_policy(precision):
        model = build_cnn()
        model.compile(optimizer=keras.optimizers.Adam(1e-3),
                      loss="sparse_categorical_crossentropy", metrics=["accuracy"],
                      jit_compile=BASE["jit_compile"],
                      steps_per_execution=BASE["steps_per_execution"])
    return model


def run_benchmark(*, devices, pipelines, batch_size: int, n_images: int, repeats: int,
                  warmup: int = summaries.WARMUP, max_steps=None, cpu_max_steps=None,
                  classic_max_steps=None, workers: int = 2, chunks: bool = False,
                  data_dir=None, run_id: str | None = None, earlier=(), progress=print) -> list[dict]:
    """Every pipeline on each device, trained and read alone, then with ``chunks`` the chunk
    layouts: the records; ``earlier``'s conditions are skipped."""
    return list(_measured(**locals()))


def _measured(*, devices, pipelines, batch_size, n_images, repeats, warmup, max_steps,
              cpu_max_steps, classic_max_steps, workers, chunks, data_dir, run_id, earlier,
              progress):
    """:func:`run_benchmark`'s records, each yielded as it is made."""
    from gpulesson.datasets.synthetic import make_synthetic
    from gpulesson.experiments.feeding import pipelines as fp

    backend = _keras().backend.backend()
    pipelines = check_pipelines(pipelines, backend)
    for device in devices:
        check_device(device)
    limits = {"max_steps": max_steps, "cpu_max_steps": cpu_max_steps,
              "classic_max_steps": classic_max_steps}
    for name, value in {"batch_size": batch_size, "n_images": n_images, "repeats": repeats,
                        "workers": workers, "warmup": warmup, **limits}.items():
        least = 0 if name == "warmup" else 1
        if (value is not None or name not in limits) and (
                isinstance(value, bool) or not isinstance(value, int) or value < least):
            raise ValueError(f"{name} must be a whole number of at least {least}, not {value!r}")
    if batch_size > n_images:
        raise ValueError(f"batch_size {batch_size} is larger than n_images {n_images}")
    earlier = list(earlier)
    check_earlier(earlier, n_images=n_images, backend=backend)
    done = {RECORDS.key(r) for r in earlier}
    run_id = run_id or new_run_id()
    keep = partial(measurement_record, run_id=run_id, batch_size=batch_size, n_images=n_images)
    files = {}
    with contextlib.ExitStack() as stack:
        if data_dir is None:
            data_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="gpulesson-feeding-"))
        (x, y), _ = make_synthetic(n_images, 10, seed=0, progress=False)
        ram = (x, y.astype("int32"))  # bytes, as the files hold them: the model scales them
        for device in devices:
            keras_device = check_device(device)
            settings = {"train": BASE, "loader": LOADER}
            todo = {name: [mode for mode, setting in settings.items() if RECORDS.key(
                {"device_kind": device, "pipeline": name, "mode": mode, "group": "pipelines",
                 "batch_size": batch_size, **setting}) not in done] for name in pipelines}
            skipped = sum(len(settings) - len(left) for left in todo.values())
            if skipped:
                progress(f"{device} pipelines: {skipped} of {len(pipelines) * len(settings)} "
                         f"condition(s) recorded in run {run_id} already")
            names = [name for name in pipelines if todo[name]]
            if not names:
                continue  # nothing left: no files written, no model built
            device_limit = cpu_max_steps if device == "cpu" and cpu_max_steps else max_steps
            kinds = [k for k in dict.fromkeys(fp.FILES[n] for n in names) if k and k not in files]
            if kinds:
                started = time.perf_counter()
                files.update(fp.write_files(data_dir, x, y, kinds, batch_size=batch_size))
                progress(f"wrote {', '.join(kinds)} file(s), batch {batch_size} chunks, in "
                         f"{time.perf_counter() - started:.1f} s")
            on_device = fp.to_device(*ram, keras_device) if "device" in names else None
            model = build_model(keras_device)
            for name in names:
                full = fp.make_pipeline(name, batch_size=batch_size, files=files, arrays=ram,
                                        device_arrays=on_device, workers=workers)
                # the classic pipeline: at most classic_max_steps too
                caps = (device_limit, name == "classic" and classic_max_steps)
                dataset = fp.limit(full, min(filter(None, caps), default=None))
                extra = {"workers": workers if name in WORKER_PIPELINES else 0,
                         **allocator.mode(), **fp.device_method(name)}
                if fp.FILES[name]:
                    extra.update(fp.file_info(files[fp.FILES[name]]))
                for mode in todo[name]:
                    meter = timing.BusyMeter()
                    if mode == "train":
                        budget = timing.Budget(warmup, repeats)
                        with _keras().device(keras_device):
                            model.fit(dataset, epochs=warmup + repeats, verbose=0, **pagewords.IN_ORDER,
                                      callbacks=[timing.synced_epoch_timer(budget)])
                    else:
                        budget = time_loader(dataset, keras_device, warmup=warmup,
                                             repeats=repeats)
                    if name == "classic":
                        extra["full_reads"] = full.full_reads
                    record = keep(budget, device=device, pipeline=name, mode=mode,
                                  steps=len(dataset), full_steps=len(full), group="pipelines",
                                  **settings[mode], extra={**extra, **meter.read()})
                    yield record
                    epochs = record["summary"]
                    progress(f"{device} {name:19} {short_setting(record):14} b{batch_size}: "
                             f"{rate_text(record['images_per_second']):>7} img/s, epoch "
                             f"{epochs['median']:.3f} s ({epochs['min']:.3f}-"
                             f"{epochs['max']:.3f}, {epochs['n']})"
                             + (f" {record['steps']}/{record['full_epoch_steps']} steps"
                                if record["partial_epoch"] else ""))
                if name == "classic":
                    full.close()
            del model
        steps = -(-n_images // batch_size)
        for layout, (blocks, compression, cache) in (CHUNKS if chunks else {}).items():
            if RECORDS.key({"device_kind": "cpu", "pipeline": "lesson", "mode": "loader",
                            "group": GROUP, "batch_size": batch_size, "layout": layout,
                            **LOADER}) in done:
                continue
            path = Path(data_dir) / f"chunks-{blocks}x{batch_size}-{compression or 'none'}.h5"
            if not path.is_file():
                fp.write_lesson_file(path, x, y, chunk_rows=blocks * batch_size,
                                     compression=compression)
            meter = timing.BusyMeter()
            budget = fp.time_reading(path, batch_size, cache_mib=cache, warmup=warmup,
                                     repeats=repeats)
            record = keep(budget, device="cpu", pipeline="lesson", mode="loader", steps=steps,
                          full_steps=steps, group=GROUP, **LOADER,
                          extra={"layout": layout, "window": fp.WINDOW,
                                 "cache_bytes": cache * fp.MIB if cache else None,
                                 **fp.file_info(path), **meter.read()})
            yield record
            progress(f"host {layout:40}: {rate_text(record['images_per_second']):>7} img/s read alone")


def measure(args, *, run_id: str, done):
    """The command's run: its options checked (a usage error), then each record as it is made."""
    quick = args.quick
    options = {name: value if value is not None else (small if quick else default)
               for name, value, small, default in (
                   ("batch_size", args.batch_size, QUICK_BATCH_SIZE, BATCH_SIZE),
                   ("n_images", args.n_images, QUICK_N_IMAGES, N_IMAGES),
                   ("repeats", args.repeats, summaries.QUICK_REPEATS, summaries.REPEATS))}
    if options["batch_size"] > options["n_images"]:
        raise cli.UsageError(f"--batch-size {options['batch_size']} is larger than --n-images "
                             f"{options['n_images']}")
    if options["repeats"] < summaries.repeats_for(quick):
        raise cli.UsageError(
            f"--repeats must be at least {summaries.repeats_for(quick)} (the lesson's rule: "
            f"{summaries.REPEATS} timed epochs, {summaries.QUICK_REPEATS} with --quick), not "
            f"{options['repeats']}: make a slow condition smaller with --cpu-max-steps "
            "or --classic-max-steps instead")
    if args.warmup < summaries.WARMUP:
        raise cli.UsageError(f"--warmup must be at least {summaries.WARMUP} (the lesson's rule: a "
                             f"recorded warm-up), not {args.warmup}")
    from gpulesson.machine.devices import cpu_info

    devices = cli.devices_here(args.devices)  # PyTorch's malloc fixed for every record
    backend = _keras().backend.backend()  # after devices_here, which hides CUDA's start-up noise
    pipelines = args.pipelines or pipelines_for(backend)
    try:
        check_pipelines(pipelines, backend)
    except ValueError as exc:
        raise cli.UsageError(str(exc)) from None
    workers = args.workers if args.workers is not None else (
        2 if quick else max(2, min(8, int(cpu_info()["cores_usable"]) // 2)))
    earlier = RECORDS.read(args.out, run_id=run_id) if done else []
    try:
        check_earlier(earlier, n_images=options["n_images"], backend=backend)
    except ValueError as exc:
        cli.refuse(f"error: {exc}. Nothing was measured or written.")
    print(f"Run {run_id}: Keras backend {backend}; devices: {', '.join(devices)}; "
          f"{options['n_images']:,} images, batch {options['batch_size']}, "
          f"{options['repeats']} timed epoch(s) after {args.warmup} warm-up"
          + (f"; going on: {len(done)} condition(s) recorded already" if done else ""),
          flush=True)
    yield from _measured(
        devices=devices, pipelines=pipelines, warmup=args.warmup, max_steps=args.max_steps,
        cpu_max_steps=args.cpu_max_steps, classic_max_steps=args.classic_max_steps,
        workers=workers, chunks=args.chunks, data_dir=args.data_dir, run_id=run_id,
        earlier=earlier, progress=lambda line: print(line, flush=True), **options)
