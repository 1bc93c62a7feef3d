"""data.pool: many devices share a pool of data sets (repeated shards), held once."""

import pytest

from fedfit.data import build_federated_data
from fedfit.errors import DataError


def test_devices_share_the_pools_sets_round_robin() -> None:
    data = build_federated_data(dataset="digits", num_devices=5000, partition="iid", seed=0, pool=100)

    assert len(data.train) == len(data.test) == 5000
    assert all(data.train[d] is data.train[d % 100] for d in (0, 99, 100, 4321, 4999))
    assert len({id(t) for t in data.train}) == 100


def test_a_pool_gives_the_same_sets_as_a_fleet_of_pool_devices() -> None:
    pooled = build_federated_data(dataset="synthetic", num_devices=300, partition="natural", seed=3, pool=30,
                                  max_train_samples=3000)
    small = build_federated_data(dataset="synthetic", num_devices=30, partition="natural", seed=3,
                                 max_train_samples=3000)

    assert all(bool((pooled.train[d + 30].x == small.train[d].x).all()) for d in range(30))


def test_more_devices_than_samples_without_a_pool_is_one_clear_error() -> None:
    with pytest.raises(DataError, match=r"5000 device data sets but 1437 digits training samples: "
                                         r"set data.pool \(at most 1437\)") as err:
        build_federated_data(dataset="digits", num_devices=5000, partition="iid", seed=0)

    assert "\n" not in str(err.value)


def test_a_pool_larger_than_the_samples_is_named_as_such() -> None:
    # the pool's sets are what the samples run out for (it said "1500 devices ... set data.pool"
    # to a user who had set data.pool: 1500 on a fleet of 2,000)
    with pytest.raises(DataError, match=r"1500 device data sets but 1437 digits training samples: "
                                         r"set data.pool \(at most 1437\)"):
        build_federated_data(dataset="digits", num_devices=2000, partition="iid", seed=0, pool=1500)


def test_too_few_synthetic_samples_point_to_the_pool() -> None:
    with pytest.raises(DataError, match=r"leaves no training sample for each of 5000 devices \(raise it, "
                                         r"or set data.pool"):
        build_federated_data(dataset="synthetic", num_devices=5000, partition="natural", seed=0,
                             max_train_samples=100)
