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

The package has three parts: :mod:`~gpulesson.experiments.parallel.training` (the global batch,
the learning rate and the engine), :mod:`~gpulesson.experiments.parallel.cost` (the cost model)
and :mod:`~gpulesson.experiments.parallel.command` (the command line); this module re-exports
their names.
"""

from __future__ import annotations

from gpulesson.experiments.parallel.command import (
    main,
)
from gpulesson.experiments.parallel.cost import (
    ALLREDUCE_BASE_US,
    INTERCONNECT_SOURCES,
    INTERCONNECTS,
    LATENCY_SOURCE,
    LESSON_CNN_PARAMETERS,
    RESNET50_PARAMETERS,
    RESNET50_SOURCE,
    STEP_LATENCY_US,
    allreduce_seconds,
    cost_table,
    format_cost_table,
    link_allreduce_seconds,
    link_latency_seconds,
    parameter_server_bytes,
    print_cost_table,
    resnet50_step_ms,
    ring_allreduce_bytes,
    scaling_efficiency,
)
from gpulesson.experiments.parallel.training import (
    build_parallel_cnn,
    global_batch_size,
    local_weights,
    process_slice,
    replica_copies,
    replicas_in_sync,
    run_training,
    scaled_learning_rate,
    use_jax,
)

__all__ = ["ALLREDUCE_BASE_US", "INTERCONNECTS", "INTERCONNECT_SOURCES", "LATENCY_SOURCE",
           "LESSON_CNN_PARAMETERS", "RESNET50_PARAMETERS", "RESNET50_SOURCE", "STEP_LATENCY_US",
           "allreduce_seconds", "build_parallel_cnn", "cost_table", "format_cost_table",
           "global_batch_size", "link_allreduce_seconds", "link_latency_seconds", "local_weights",
           "main", "parameter_server_bytes", "print_cost_table", "process_slice", "replica_copies",
           "replicas_in_sync", "resnet50_step_ms", "ring_allreduce_bytes", "run_training",
           "scaled_learning_rate", "scaling_efficiency", "use_jax"]
