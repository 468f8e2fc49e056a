"""Helpers for the lesson "Deep learning on GPUs: CPU vs GPU".

Everything here is support code that is not itself the teaching point: choosing and
preparing the data set (CIFAR-10 or an explicitly labelled synthetic stand-in), writing and
checking the HDF5 files the notebooks read, reporting which devices are visible, and plotting
a few images. Submodules import Keras/TensorFlow only when needed, so importing this package
(or ``gpulesson.settings``) is instant.
"""

__version__ = "0.1.0"
