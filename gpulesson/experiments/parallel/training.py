"""Data-parallel training of the lesson's CNN: the global batch, the learning rate, the engine
(the Keras 3 distribution API on JAX; the all-reduce of the gradients is XLA's)."""

import os
import sys
import time

import numpy as np


def whole(**values) -> None:
    """ValueError unless every value is a whole number >= 1 (the message names it)."""
    for name, value in values.items():
        if int(value) != value or value < 1:
            raise ValueError(f"{name} must be a whole number >= 1, not {value!r}")


def global_batch_size(per_replica_batch: int, replicas: int) -> int:
    """The batch one optimizer step sees: each device keeps its batch, the update's grows."""
    whole(per_replica_batch=per_replica_batch, replicas=replicas)
    return int(per_replica_batch) * int(replicas)


def scaled_learning_rate(base_learning_rate: float, global_batch: int, base_batch: int,
                         warmup_steps: int = 0, step: int | None = None) -> float:
    """The linear scaling rule (Goyal et al. 2017), ``base_learning_rate * global_batch /
    base_batch``, reached linearly over ``warmup_steps`` from the base rate at ``step`` 0."""
    if base_learning_rate <= 0:
        raise ValueError(f"base_learning_rate must be > 0, not {base_learning_rate!r}")
    whole(global_batch=global_batch, base_batch=base_batch)
    if warmup_steps < 0:
        raise ValueError(f"warmup_steps must be >= 0, not {warmup_steps!r}")
    target = base_learning_rate * global_batch / base_batch
    if warmup_steps == 0 or step is None or step >= warmup_steps:
        return target
    if step < 0:
        raise ValueError(f"step must be >= 0, not {step!r}")
    return base_learning_rate + (target - base_learning_rate) * step / warmup_steps


def process_slice(x, global_batch: int, process_id: int, num_processes: int):
    """This process' share of every global batch of ``x``: together the processes feed exactly
    the batches one process would feed alone."""
    if not 0 <= process_id < num_processes:
        raise ValueError(f"process_id must be in 0..{num_processes - 1}, not {process_id}")
    if global_batch % num_processes:
        raise ValueError(f"the global batch ({global_batch}) must be a multiple of the "
                         f"number of processes ({num_processes})")
    if len(x) % global_batch:
        raise ValueError(f"{len(x)} rows are not a whole number of global batches of {global_batch}")
    local = global_batch // num_processes
    x = np.asarray(x)
    batches = x.reshape((len(x) // global_batch, global_batch, *x.shape[1:]))
    return batches[:, process_id * local:(process_id + 1) * local].reshape((-1, *x.shape[1:]))


def use_jax(cpu_devices: int | None = None):
    """``keras`` on the JAX backend, with ``cpu_devices`` logical CPU devices if given, before
    anything imports Keras or JAX."""
    if "keras" in sys.modules and (running := sys.modules["keras"].backend.backend()) != "jax":
        raise RuntimeError("data-parallel training here needs the JAX backend, but Keras runs on "
                           f"{running!r}: start a new Python with KERAS_BACKEND=jax")
    if os.environ.get("KERAS_BACKEND", "jax") != "jax":
        raise RuntimeError(f"KERAS_BACKEND={os.environ['KERAS_BACKEND']}: data-parallel "
                           "training here needs KERAS_BACKEND=jax")
    os.environ["KERAS_BACKEND"] = "jax"
    import jax

    if cpu_devices is not None:
        whole(cpu_devices=cpu_devices)
        try:
            jax.config.update("jax_num_cpu_devices", int(cpu_devices))
        except RuntimeError as exc:
            raise RuntimeError(f"cannot make {cpu_devices} CPU devices: JAX has started already in this "
                               "process; call use_jax(cpu_devices=...) first, in a new Python") from exc
    # Several processes on CPUs exchange through gloo (GPUs use NCCL regardless).
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    import keras

    return keras


def build_parallel_cnn(learning_rate: float, *, seed: int = 0):
    """The lesson's CNN with seeded weights and plain SGD, whose update is proportional to the
    gradient (JAX draws a global batch's dropout masks alike however it is split)."""
    keras = use_jax()
    from gpulesson.lesson import build_cnn

    keras.utils.set_random_seed(seed)
    model = build_cnn()
    model.compile(optimizer=keras.optimizers.SGD(learning_rate),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def replica_copies(model):
    """For each weight, the copies its devices hold: ``[(name, [array per device]), ...]``."""
    return [(v.path, [np.asarray(shard.data) for shard in v.value.addressable_shards]) for v in model.weights]


def replicas_in_sync(model) -> bool:
    """True when every device holds bit-for-bit the same copy of every weight."""
    return all(np.array_equal(copies[0], other)
               for _, copies in replica_copies(model) for other in copies[1:])


def local_weights(model) -> list[np.ndarray]:
    """This process' first copy of each weight."""
    return [copies[0] for _, copies in replica_copies(model)]


def load_images(data: str, n_images: int, seed: int = 0):
    """``n_images`` training images and int32 labels, made in memory or from a lesson HDF5 file."""
    if data == "synthetic":
        from gpulesson.datasets.synthetic import make_synthetic

        (x, y), _ = make_synthetic(n_images, 0, seed=seed, progress=False)
    else:
        from gpulesson.datasets.hdf5 import read_hdf5

        x, y = read_hdf5(data, "train", 0, n_images)
        if len(x) < n_images:
            raise ValueError(f"{data} has {len(x)} training images, {n_images} are needed")
    return x, y.astype("int32")


def run_training(*, per_replica_batch: int, steps: int, learning_rate: float, base_batch: int,
                 data: str = "synthetic", seed: int = 0, devices=None, log=print):
    """Train the lesson's CNN data-parallel over all devices of all processes (or ``devices``)
    for ``steps`` global batches, the SGD rate scaled linearly; the model. Process 0 logs."""
    keras = use_jax()
    import jax

    n_proc, proc = jax.process_count(), jax.process_index()
    devices = devices or keras.distribution.list_devices()
    batch = global_batch_size(per_replica_batch, len(devices))
    rate = scaled_learning_rate(learning_rate, batch, base_batch)
    x, y = load_images(data, batch * steps, seed)
    # Each process feeds its own slice (process_slice): automatic sharding needs a tf.data.Dataset.
    keras.distribution.set_distribution(
        keras.distribution.DataParallel(devices=devices, auto_shard_dataset=False))
    model = build_parallel_cnn(rate, seed=seed)
    say = log if proc == 0 else (lambda *a, **k: None)
    say(f"{len(devices)} device(s) in {n_proc} process(es): {', '.join(devices)}")
    say(f"global batch {batch} = {per_replica_batch} per device x {len(devices)}; learning rate {rate:g}")
    for step in range(steps):
        rows = slice(step * batch, (step + 1) * batch)
        start = time.perf_counter()
        history = model.fit(process_slice(x[rows], batch, proc, n_proc),
                            process_slice(y[rows], batch, proc, n_proc),
                            batch_size=batch // n_proc, epochs=1, shuffle=False, verbose=0)
        # The first step includes compiling; each step includes fit's set-up.
        say(f"step {step + 1}: loss {float(history.history['loss'][-1]):.4f}, "
            f"{(time.perf_counter() - start) * 1e3:.0f} ms")
    return model
