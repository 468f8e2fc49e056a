"""The PyTorch episode's CNN trained data-parallel with DistributedDataParallel (DDP): one process
per GPU, started by ``torchrun`` or ``srun`` (or alone)."""
