"""The PyTorch episode's CNN trained data-parallel with DistributedDataParallel (DDP).

    torchrun --standalone --nproc-per-node=4 -m gpulesson.experiments.torch_ddp --epochs 5
    srun python -m gpulesson.experiments.torch_ddp --epochs 5       # one task per GPU
    python -m gpulesson.experiments.torch_ddp --epochs 1            # one process

Unlike the Keras route of :mod:`gpulesson.experiments.parallel` (one process drives all the
GPUs of a node), PyTorch runs one process per GPU. Each holds a replica, reads its share of
every epoch (``DistributedSampler``) and takes part in the all-reduce of the gradients that
DDP runs during the backward pass (NCCL between GPUs, gloo between CPUs).

Parts: :mod:`~gpulesson.experiments.torch_ddp.launch` (which process am I, pure Python),
:mod:`~gpulesson.experiments.torch_ddp.training` (data, sampler, model, epochs),
:mod:`~gpulesson.experiments.torch_ddp.checkpoint` (atomic checkpoints) and
:mod:`~gpulesson.experiments.torch_ddp.command` (the command line and the out folder).
PyTorch is imported only by the last three.
"""
