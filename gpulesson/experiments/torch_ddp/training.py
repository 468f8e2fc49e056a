"""Data-parallel training of the PyTorch episode's CNN: the data, the sampler, the model, the epochs.
DDP averages the gradients over the processes in the backward pass: one update on the global batch.
"""

import time

import torch
from torch import nn
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

from gpulesson.lesson.torch import SmallCNN, to_dataset


def load_dataset(data: str, n_train: int, seed: int = 0):
    """``n_train`` training images as a TensorDataset: the MNIST-shaped stand-in, or MNIST from
    the lesson's data folder, never downloaded here (by every process at once)."""
    from gpulesson.datasets import mnist

    if data == "synthetic":
        (x, y), _ = mnist.synthetic_mnist(n_train, 0, seed=seed)
    else:
        from gpulesson.datasets.settings import get_settings

        (x, y), _ = mnist.load_mnist(get_settings().data_dir, download=False)
        if len(x) < n_train:
            raise ValueError(f"MNIST has {len(x)} training images, not {n_train}: lower --n-train")
        x, y = x[:n_train], y[:n_train]
    scaled = x.astype("float32") / 255
    return to_dataset(x, y, float(scaled.mean()), float(scaled.std()))


def make_sampler(n_samples: int, world_size: int, rank: int, *, seed: int = 0,
                 drop_last: bool = False) -> DistributedSampler:
    """This rank's share of one shuffled order (the same seed on every rank), new each epoch
    after ``set_epoch``; padded with the first indices, or with ``drop_last`` cut."""
    return DistributedSampler(range(n_samples), num_replicas=world_size, rank=rank,
                              shuffle=True, seed=seed, drop_last=drop_last)


def build_model(seed: int, dropout: bool = True) -> nn.Module:
    """The episode's SmallCNN with weights drawn from ``seed`` (dropout's masks are per process)."""
    torch.manual_seed(seed)
    model = SmallCNN()
    if not dropout:
        model.dropout = nn.Identity()
    return model


def train_epochs(model, optimizer, dataset, sampler, *, per_replica_batch: int, device,
                 first_epoch: int, epochs: int, on_epoch_end, log=print, batch_delay: float = 0.0):
    """Train from ``first_epoch`` (0-based) up to ``epochs``; ``on_epoch_end(epoch, loss)`` gets
    the mean loss over all ranks' samples."""
    import torch.distributed as dist

    loss_fn = nn.CrossEntropyLoss()
    loader = DataLoader(dataset, batch_size=per_replica_batch, sampler=sampler)
    for epoch in range(first_epoch, epochs):
        # A new order on every rank each epoch, the same one after a restart.
        sampler.set_epoch(epoch)
        model.train()
        total = torch.zeros(2, device=device)
        for images, labels in loader:
            images, labels = images.to(device), labels.to(device)
            optimizer.zero_grad()
            loss = loss_fn(model(images), labels)
            # DDP all-reduces the gradients here, bucket by bucket, while the backward
            # pass goes on: communication overlaps the computation.
            loss.backward()
            optimizer.step()
            total += torch.stack([loss.detach() * len(labels),
                                  torch.tensor(float(len(labels)), device=device)])
            if batch_delay:
                time.sleep(batch_delay)
        if dist.is_initialized():
            dist.all_reduce(total)
        mean_loss = float(total[0] / total[1])
        log(f"epoch {epoch + 1}/{epochs}: loss {mean_loss:.4f} over {int(total[1])} samples")
        on_epoch_end(epoch, mean_loss)


def pick_device(local_rank: int, want: str = "auto") -> torch.device:
    """This process' GPU (its local rank, modulo the GPUs it sees) or the CPU."""
    if want == "cpu" or (want == "auto" and not torch.cuda.is_available()):
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise RuntimeError("no GPU is visible to PyTorch: use --device cpu, or run on a GPU node")
    device = torch.device("cuda", local_rank % torch.cuda.device_count())
    torch.cuda.set_device(device)
    return device
