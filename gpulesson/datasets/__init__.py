"""The lesson's data sets: CIFAR-10, MNIST, the synthetic stand-in, the HDF5 files and their
preparation, and the settings that choose them."""
