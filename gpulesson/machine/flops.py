"""Floating-point operations of a training step, counted from the layers' shapes (without Keras):
convolutions and dense layers only, a multiply-add is 2, training about 3 times the forward pass.
"""

TRAINING_FACTOR = 3  # forward + backward (gradients of the inputs and of the weights)


def cnn_forward_flops(input_shape=(32, 32, 3), filters=(32, 64, 128, 256), dense=(256, 512),
                      n_classes: int = 10, kernel: int = 3) -> int:
    """The forward pass of one image through the lesson's CNN (``gpulesson.lesson.build_cnn``)."""
    height, width, channels = input_shape
    total = 0
    for out in filters:  # 'same'-padded, stride 1: a multiply-add per output value and kernel tap
        total += 2 * height * width * kernel * kernel * channels * out
        height, width, channels = height // 2, width // 2, out
    units = height * width * channels
    for out in (*dense, n_classes):
        total += 2 * units * out
        units = out
    return total


def training_flops_per_image(forward: int | None = None) -> int:
    """One training image: forward and backward pass (:data:`TRAINING_FACTOR` x the forward)."""
    return TRAINING_FACTOR * (cnn_forward_flops() if forward is None else forward)


def tflops(flops_per_image: float, images: int, seconds: float) -> float:
    """The achieved rate in TFLOP/s: ``images`` of ``flops_per_image`` in ``seconds``."""
    if seconds <= 0:
        raise ValueError(f"seconds must be positive, not {seconds}")
    return flops_per_image * images / seconds / 1e12
