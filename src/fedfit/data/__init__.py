"""Data for federated simulation: loaders, the FedProx synthetic generator, partitioners.

``build_federated_data`` is the entry point: it loads (or generates) a data set and splits it
into a ``FederatedData`` of per-device train and test sets. Nothing here downloads.
"""

from fedfit.data import partition
from fedfit.data.datasets import (
    FASHION_MNIST_DIR,
    ArrayDataset,
    concatenate,
    load_digits,
    load_fashion_mnist,
)
from fedfit.data.federated import DATASETS, PARTITIONS, FederatedData, build_federated_data
from fedfit.data.idx import read_idx, write_idx
from fedfit.data.synthetic import SyntheticDevice, synthetic_device, synthetic_federated

__all__ = [
    "DATASETS",
    "FASHION_MNIST_DIR",
    "PARTITIONS",
    "ArrayDataset",
    "FederatedData",
    "SyntheticDevice",
    "build_federated_data",
    "concatenate",
    "load_digits",
    "load_fashion_mnist",
    "partition",
    "read_idx",
    "synthetic_device",
    "synthetic_federated",
    "write_idx",
]
