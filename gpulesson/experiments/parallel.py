"""Data-parallel training of the lesson's CNN, and what the gradient exchange costs.

    python -m gpulesson.experiments.parallel train --cpu-devices 4 --steps 5     # try it on a laptop
    python -m gpulesson.experiments.parallel train --per-replica-batch 128       # all local GPUs
    srun python -m gpulesson.experiments.parallel train --slurm ...              # several nodes
    python -m gpulesson.experiments.parallel cost --compute-ms 40                # the all-reduce model

The engine is the Keras 3 distribution API on the JAX backend (``KERAS_BACKEND=jax``):

* one process, several devices: ``keras.distribution.DataParallel`` over
  ``keras.distribution.list_devices()``. Every device holds a copy (replica) of the weights;
  every global batch is split along its first axis, one slice per device; JAX (XLA) sums the
  gradients over the devices with an all-reduce (NCCL on NVIDIA GPUs), so all copies make
  the same update. The same code runs on 1..N devices.
* several processes (several nodes): ``keras.distribution.initialize`` first, which calls
  ``jax.distributed.initialize``. Under Slurm (``srun``) JAX reads the process count, the
  process id, the first node (the coordinator) and the local task id from ``SLURM_*``
  variables and gives each process the GPU numbered like its local task
  (``SLURM_LOCALID``): start one task per GPU. Elsewhere, pass the coordinator's address,
  the number of processes and this process' id. Each process feeds its own slice of every
  global batch (:func:`process_slice`); ``DataParallel`` joins the slices into one global
  batch.

Nothing here exchanges gradients itself: the all-reduce is XLA's. On CPUs (the tests, a
laptop) the devices are "logical" CPU devices (``--cpu-devices``) and the processes talk
through gloo.

The cost model (:func:`allreduce_seconds`, :func:`scaling_efficiency`, :func:`cost_table`)
is pure Python and needs no framework.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass

import numpy as np

# --- Global batch and learning rate -----------------------------------------------------------


def global_batch_size(per_replica_batch: int, replicas: int) -> int:
    """The batch one optimizer step sees: ``per_replica_batch * replicas``.

    Data parallelism keeps the batch each device computes (per replica) and multiplies the
    batch of the update: 4 GPUs at 128 images each take one step on 512 images.
    """
    for name, value in (("per_replica_batch", per_replica_batch), ("replicas", replicas)):
        if int(value) != value or value < 1:
            raise ValueError(f"{name} must be a whole number >= 1, not {value!r}")
    return int(per_replica_batch) * int(replicas)


def scaled_learning_rate(base_learning_rate: float, global_batch: int, base_batch: int,
                         warmup_steps: int = 0, step: int | None = None) -> float:
    """The linear scaling rule: the learning rate grows with the global batch.

    A rate tuned for ``base_batch`` becomes ``base_learning_rate * global_batch /
    base_batch`` (Goyal et al. 2017, "Accurate, large minibatch SGD"): with k times more
    images per step there are k times fewer steps per epoch, and each step moves k times
    further. Large rates are unstable at the start of training, so they are reached by a
    *warm-up*: with ``warmup_steps`` and the current ``step`` (0-based), the rate rises
    linearly from ``base_learning_rate`` to the scaled rate over the first ``warmup_steps``
    steps. The rule is a starting point, not a law: it fails for very large batches, and
    adaptive optimizers (Adam) often need less than linear scaling; check the validation loss.
    """
    if base_learning_rate <= 0:
        raise ValueError(f"base_learning_rate must be > 0, not {base_learning_rate!r}")
    for name, value in (("global_batch", global_batch), ("base_batch", base_batch)):
        if int(value) != value or value < 1:
            raise ValueError(f"{name} must be a whole number >= 1, not {value!r}")
    if warmup_steps < 0:
        raise ValueError(f"warmup_steps must be >= 0, not {warmup_steps!r}")
    target = base_learning_rate * global_batch / base_batch
    if warmup_steps == 0 or step is None or step >= warmup_steps:
        return target
    if step < 0:
        raise ValueError(f"step must be >= 0, not {step!r}")
    return base_learning_rate + (target - base_learning_rate) * step / warmup_steps


def process_slice(x, global_batch: int, process_id: int, num_processes: int):
    """This process' share of every global batch of ``x`` (the rows in batch order).

    Global batch ``b`` is rows ``b*global_batch`` to ``(b+1)*global_batch``; process ``p``
    of ``n`` takes the ``p``-th of its ``n`` equal parts, so that the processes together
    feed exactly the batches one process would feed alone. ``len(x)`` must be a multiple of
    ``global_batch`` and ``global_batch`` a multiple of ``num_processes``.
    """
    if not 0 <= process_id < num_processes:
        raise ValueError(f"process_id must be in 0..{num_processes - 1}, not {process_id}")
    if global_batch % num_processes:
        raise ValueError(f"the global batch ({global_batch}) must be a multiple of the "
                         f"number of processes ({num_processes})")
    if len(x) % global_batch:
        raise ValueError(f"{len(x)} rows are not a whole number of global batches of "
                         f"{global_batch}")
    local = global_batch // num_processes
    x = np.asarray(x)
    batches = x.reshape((len(x) // global_batch, global_batch, *x.shape[1:]))
    mine = batches[:, process_id * local:(process_id + 1) * local]
    return mine.reshape((-1, *x.shape[1:]))


# --- The engine: Keras 3 distribution API on JAX ----------------------------------------------


def use_jax(cpu_devices: int | None = None):
    """Import Keras on the JAX backend, with ``cpu_devices`` logical CPU devices if given.

    Must run before anything imports Keras or JAX in this process: the backend and the
    number of CPU devices are fixed when they start. Returns the ``keras`` module.
    """
    if "keras" in sys.modules and sys.modules["keras"].backend.backend() != "jax":
        raise RuntimeError("data-parallel training here needs the JAX backend, but Keras "
                           f"runs on {sys.modules['keras'].backend.backend()!r}: start a new "
                           "Python with KERAS_BACKEND=jax")
    if os.environ.get("KERAS_BACKEND", "jax") != "jax":
        raise RuntimeError(f"KERAS_BACKEND={os.environ['KERAS_BACKEND']}: data-parallel "
                           "training here needs KERAS_BACKEND=jax")
    os.environ["KERAS_BACKEND"] = "jax"
    import jax

    if cpu_devices is not None:
        if int(cpu_devices) != cpu_devices or cpu_devices < 1:
            raise ValueError(f"cpu_devices must be a whole number >= 1, not {cpu_devices!r}")
        try:
            jax.config.update("jax_num_cpu_devices", int(cpu_devices))
        except RuntimeError as exc:
            raise RuntimeError(f"cannot make {cpu_devices} CPU devices: JAX has started "
                               "already in this process; call use_jax(cpu_devices=...) "
                               "first, in a new Python") from exc
    # Several processes on CPUs exchange through gloo (GPUs use NCCL regardless).
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    import keras

    return keras


def start_processes(coordinator: str | None = None, num_processes: int | None = None,
                    process_id: int | None = None, seed: int = 0):
    """Join this process to the others (``jax.distributed``), before any computation.

    With no arguments, JAX finds them in Slurm's variables (run under ``srun``). The seed is
    set first so that every process creates the same initial weights.
    """
    keras = use_jax()
    keras.utils.set_random_seed(seed)
    keras.distribution.initialize(coordinator, num_processes, process_id)
    return keras.distribution.list_devices()


def data_parallel(devices=None):
    """Make every model created from now on data-parallel over ``devices`` (default: all).

    Returns the ``keras.distribution.DataParallel`` it set.
    """
    keras = use_jax()
    devices = devices or keras.distribution.list_devices()
    # Each process feeds its own slice of the data (process_slice): no
    # automatic sharding, which would need a tf.data.Dataset.
    distribution = keras.distribution.DataParallel(devices=devices, auto_shard_dataset=False)
    keras.distribution.set_distribution(distribution)
    return distribution


def build_parallel_cnn(learning_rate: float, *, optimizer: str = "sgd", dropout: bool = True,
                       seed: int = 0):
    """The lesson's CNN (``gpulesson.lesson.build_cnn``), compiled, with seeded weights.

    ``optimizer="adam"`` compiles it as the episode does (``compile_cnn``); ``"sgd"`` (plain
    SGD) makes one step's update proportional to the gradient, which is what the tests
    compare. ``dropout=False`` sets the dropout rates to 0. (With dropout, a data-parallel
    step still equals the single-device step: JAX draws the same random masks for a
    global batch however it is split across devices.)
    Call :func:`data_parallel` first to get a data-parallel model.
    """
    keras = use_jax()
    from gpulesson.lesson import build_cnn, compile_cnn

    keras.utils.set_random_seed(seed)
    model = build_cnn()
    if not dropout:
        for layer in model.layers:
            if isinstance(layer, keras.layers.Dropout):
                layer.rate = 0.0
    if optimizer == "adam":
        return compile_cnn(model, learning_rate)
    if optimizer != "sgd":
        raise ValueError(f"optimizer must be 'sgd' or 'adam', not {optimizer!r}")
    model.compile(optimizer=keras.optimizers.SGD(learning_rate),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def replica_copies(model):
    """For each weight, the copies its devices hold: ``[(name, [array per device]), ...]``."""
    return [(v.path, [np.asarray(shard.data) for shard in v.value.addressable_shards])
            for v in model.weights]


def replicas_in_sync(model) -> bool:
    """True when every device holds bit-for-bit the same copy of every weight."""
    return all(np.array_equal(copies[0], other)
               for _, copies in replica_copies(model) for other in copies[1:])


def local_weights(model) -> list[np.ndarray]:
    """The model's weights as numpy arrays (this process' first copy of each)."""
    return [copies[0] for _, copies in replica_copies(model)]


def train_steps(model, x, y, global_batch: int, num_processes: int = 1, process_id: int = 0):
    """Train one epoch over ``x, y`` (whole global batches, in order, no shuffling).

    Each process passes only its slice of every global batch (:func:`process_slice`);
    returns the last step's loss.
    """
    x = process_slice(x, global_batch, process_id, num_processes)
    y = process_slice(y, global_batch, process_id, num_processes)
    history = model.fit(x, y, batch_size=global_batch // num_processes, epochs=1,
                        shuffle=False, verbose=0)
    return float(history.history["loss"][-1])


def load_images(data: str, n_images: int, seed: int = 0):
    """``n_images`` training images (float32 in [0, 1]) and labels (int32).

    ``data`` is ``"synthetic"`` (the stand-in, made in memory from ``seed``) or the path of
    a lesson HDF5 file (its first ``n_images`` training images).
    """
    if data == "synthetic":
        from gpulesson.synthetic import make_synthetic

        (x, y), _ = make_synthetic(n_images, 0, seed=seed, progress=False)
    else:
        from gpulesson.hdf5 import read_hdf5

        x, y = read_hdf5(data, "train", 0, n_images)
        if len(x) < n_images:
            raise ValueError(f"{data} has {len(x)} training images, {n_images} are needed")
    return x.astype("float32") / 255.0, y.astype("int32")


def run_training(*, per_replica_batch: int, steps: int, learning_rate: float,
                 base_batch: int, data: str = "synthetic", seed: int = 0, devices=None,
                 log=print):
    """Train the lesson's CNN data-parallel for ``steps`` global batches; return the model.

    Runs in every process alike (after :func:`start_processes` when there are several):
    all devices of all processes (or ``devices``) share the work, the global batch is
    ``per_replica_batch`` times their number, and the SGD learning rate is scaled linearly
    from ``base_batch`` to it. Only process 0 logs.
    """
    keras = use_jax()
    import jax

    n_proc, proc = jax.process_count(), jax.process_index()
    devices = devices or keras.distribution.list_devices()
    batch = global_batch_size(per_replica_batch, len(devices))
    rate = scaled_learning_rate(learning_rate, batch, base_batch)
    x, y = load_images(data, batch * steps, seed)
    data_parallel(devices)
    model = build_parallel_cnn(rate, seed=seed)
    say = log if proc == 0 else (lambda *a, **k: None)
    say(f"{len(devices)} device(s) in {n_proc} process(es): {', '.join(devices)}")
    say(f"global batch {batch} = {per_replica_batch} per device x {len(devices)}; "
        f"learning rate {rate:g}")
    for step in range(steps):
        rows = slice(step * batch, (step + 1) * batch)
        start = time.perf_counter()
        loss = train_steps(model, x[rows], y[rows], batch, n_proc, proc)
        # The first step includes compiling; each step includes fit's set-up.
        say(f"step {step + 1}: loss {loss:.4f}, "
            f"{(time.perf_counter() - start) * 1e3:.0f} ms")
    return model


# --- The cost model of the all-reduce ---------------------------------------------------------

LESSON_CNN_PARAMETERS = 787_530
"""Parameters of the lesson's CNN (``build_cnn().count_params()``)."""

RESNET50_PARAMETERS = 25_636_712
"""Parameters of ResNet-50 as ``keras.applications.ResNet50(weights=None)`` builds it."""

INTERCONNECTS = {
    # Nominal bandwidth in one direction, GB/s (10**9 bytes), from the specifications;
    # what an all-reduce achieves is lower.
    "10 Gb/s Ethernet": 1.25,
    "InfiniBand HDR (200 Gb/s)": 25.0,
    "PCIe 4.0 x16": 32.0,
    "NVLink 3 (A100)": 300.0,
}


def ring_allreduce_bytes(n_parameters: int, n_gpus: int, bytes_per_parameter: int = 4) -> float:
    """Bytes each GPU sends (and receives) in a ring all-reduce of all the gradients.

    A ring all-reduce of ``B`` bytes over ``N`` GPUs sends ``2 (N-1)/N * B`` per GPU:
    ``N-1`` steps to sum the pieces (reduce-scatter), ``N-1`` to share the sums
    (all-gather), each step moving ``B/N``. It is 0 on one GPU, and tends to ``2 B``.
    """
    if int(n_parameters) != n_parameters or n_parameters < 1:
        raise ValueError(f"n_parameters must be a whole number >= 1, not {n_parameters!r}")
    if int(n_gpus) != n_gpus or n_gpus < 1:
        raise ValueError(f"n_gpus must be a whole number >= 1, not {n_gpus!r}")
    if bytes_per_parameter <= 0:
        raise ValueError(f"bytes_per_parameter must be > 0, not {bytes_per_parameter!r}")
    return 2 * (n_gpus - 1) / n_gpus * n_parameters * bytes_per_parameter


def allreduce_seconds(n_parameters: int, n_gpus: int, bandwidth_gb_s: float,
                      bytes_per_parameter: int = 4) -> float:
    """Seconds one step's all-reduce takes: bytes per GPU over the link's bandwidth (GB/s).

    Back-of-the-envelope: no latency per message, no overlap with the computation, the
    nominal bandwidth reached. Real all-reduces are slower; overlapping them with the
    backward pass hides part of them.
    """
    if not bandwidth_gb_s > 0:
        raise ValueError(f"bandwidth_gb_s must be > 0, not {bandwidth_gb_s!r}")
    return ring_allreduce_bytes(n_parameters, n_gpus, bytes_per_parameter) / (bandwidth_gb_s * 1e9)


def scaling_efficiency(compute_seconds: float, communication_seconds: float) -> float:
    """Fraction of the ideal speed-up reached: ``compute / (compute + communication)``.

    ``compute_seconds`` is one step's forward and backward pass on one GPU's batch (the same
    on every GPU: the per-replica batch stays fixed); the speed-up on N GPUs is then
    ``N * efficiency``.
    """
    if not compute_seconds > 0:
        raise ValueError(f"compute_seconds must be > 0, not {compute_seconds!r}")
    if communication_seconds < 0:
        raise ValueError(f"communication_seconds must be >= 0, not {communication_seconds!r}")
    return compute_seconds / (compute_seconds + communication_seconds)


@dataclass(frozen=True)
class CostRow:
    model: str
    n_parameters: int
    interconnect: str
    bandwidth_gb_s: float
    n_gpus: int
    megabytes_per_gpu: float
    communication_ms: float
    compute_ms: float
    efficiency: float

    @property
    def speedup(self) -> float:
        return self.n_gpus * self.efficiency


def cost_table(models: dict[str, tuple[int, float]], interconnects: dict[str, float] | None = None,
               gpus=(2, 4, 8), bytes_per_parameter: int = 4) -> list[CostRow]:
    """One row per model, interconnect and GPU count.

    ``models`` maps a name to ``(parameters, compute milliseconds per step on one GPU)``;
    ``interconnects`` a name to a bandwidth in GB/s (default :data:`INTERCONNECTS`).
    """
    interconnects = INTERCONNECTS if interconnects is None else interconnects
    rows = []
    for name, (n_parameters, compute_ms) in models.items():
        for link, bandwidth in interconnects.items():
            for n in gpus:
                seconds = allreduce_seconds(n_parameters, n, bandwidth, bytes_per_parameter)
                rows.append(CostRow(
                    name, n_parameters, link, bandwidth, n,
                    ring_allreduce_bytes(n_parameters, n, bytes_per_parameter) / 1e6,
                    seconds * 1e3, compute_ms,
                    scaling_efficiency(compute_ms / 1e3, seconds)))
    return rows


def format_cost_table(rows: list[CostRow]) -> str:
    """The rows as a plain-text table."""
    header = (f"{'model':<22} {'parameters':>11} {'interconnect':<26} {'GPUs':>4} "
              f"{'MB/GPU':>7} {'comm ms':>8} {'compute ms':>10} {'efficiency':>10} "
              f"{'speed-up':>8}")
    lines = [header, "-" * len(header)]
    for r in rows:
        lines.append(f"{r.model:<22} {r.n_parameters:>11,} {r.interconnect:<26} {r.n_gpus:>4} "
                     f"{r.megabytes_per_gpu:>7.1f} {r.communication_ms:>8.2f} "
                     f"{r.compute_ms:>10.1f} {r.efficiency:>10.0%} {r.speedup:>8.2f}")
    return "\n".join(lines)


def print_cost_table(models, interconnects=None, gpus=(2, 4, 8), bytes_per_parameter=4):
    """Print :func:`cost_table` as a table (float32: 4 bytes per parameter)."""
    print(format_cost_table(cost_table(models, interconnects, gpus, bytes_per_parameter)))


# --- Command line ----------------------------------------------------------------------------


def _positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _positive_float(text):
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, not {value}")
    return value


def _parser():
    parser = argparse.ArgumentParser(prog="python -m gpulesson.experiments.parallel",
                                     description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    train = sub.add_parser("train", help="train the lesson's CNN data-parallel (JAX backend)")
    train.add_argument("--per-replica-batch", type=_positive_int, default=64,
                       help="images per device and step (default 64)")
    train.add_argument("--steps", type=_positive_int, default=20,
                       help="training steps (global batches) (default 20)")
    train.add_argument("--learning-rate", type=_positive_float, default=0.01,
                       help="SGD learning rate for a global batch of --base-batch (default 0.01)")
    train.add_argument("--base-batch", type=_positive_int, default=64,
                       help="the batch the learning rate is tuned for; the rate is scaled "
                            "linearly to the global batch (default 64)")
    train.add_argument("--data", default="synthetic",
                       help="'synthetic' (made in memory) or a lesson HDF5 file")
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--cpu-devices", type=_positive_int,
                       help="use this many logical CPU devices (to try it without GPUs)")
    multi = train.add_argument_group("several processes")
    multi.add_argument("--slurm", action="store_true",
                       help="join the other tasks of this Slurm job step (run under srun)")
    multi.add_argument("--coordinator", help="host:port of process 0, outside Slurm")
    multi.add_argument("--num-processes", type=_positive_int)
    multi.add_argument("--process-id", type=int)
    multi.add_argument("--save-weights",
                       help="write the final weights here (.npz); '{process}' in the path "
                            "becomes the process number, so that every task writes its own")

    cost = sub.add_parser("cost", help="print the all-reduce cost model")
    cost.add_argument("--compute-ms", type=_positive_float, required=True,
                      help="one step's compute time on one GPU for the lesson's CNN (ms); "
                           "measure it, e.g. with the CPU-vs-GPU episode")
    cost.add_argument("--large-compute-ms", type=_positive_float,
                      help="the same for the ResNet-50-sized model (default: the same as "
                           "--compute-ms, which isolates the effect of the model's size)")
    cost.add_argument("--gpus", type=_positive_int, nargs="+", default=[2, 4, 8])
    return parser


def _train(args) -> int:
    manual = (args.coordinator, args.num_processes, args.process_id)
    if args.slurm and any(v is not None for v in manual):
        raise SystemExit("--slurm takes the processes from Slurm: leave out --coordinator, "
                         "--num-processes and --process-id")
    if not args.slurm and any(v is not None for v in manual) and None in manual:
        raise SystemExit("several processes need --coordinator, --num-processes and "
                         "--process-id together")
    use_jax(args.cpu_devices)
    if args.slurm or args.coordinator:
        start_processes(args.coordinator, args.num_processes, args.process_id, args.seed)
    model = run_training(per_replica_batch=args.per_replica_batch, steps=args.steps,
                         learning_rate=args.learning_rate, base_batch=args.base_batch,
                         data=args.data, seed=args.seed)
    synced = replicas_in_sync(model)
    import jax

    print(f"process {jax.process_index()}: the weights on its {len(jax.local_devices())} "
          f"device(s) are {'identical' if synced else 'DIFFERENT'}")
    if args.save_weights:
        np.savez(args.save_weights.replace("{process}", str(jax.process_index())),
                 *local_weights(model))
    return 0 if synced else 1


def _cost(args) -> int:
    large = args.large_compute_ms or args.compute_ms
    print("Ring all-reduce of float32 gradients at nominal bandwidth, not overlapped with "
          "the computation; the compute times per step are inputs"
          f"{'' if args.large_compute_ms else ' (the same for both models)'}.")
    print_cost_table({"lesson CNN": (LESSON_CNN_PARAMETERS, args.compute_ms),
                      "ResNet-50 size": (RESNET50_PARAMETERS, large)}, gpus=args.gpus)
    return 0


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "cost":
        return _cost(args)
    from gpulesson.errors import DataFileError

    try:
        return _train(args)
    except (DataFileError, ValueError) as exc:
        raise SystemExit(f"error: {exc}") from exc


if __name__ == "__main__":
    sys.exit(main())
