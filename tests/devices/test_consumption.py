"""Training energy taken off a state: every other field kept, as ``dataclasses.replace`` keeps it."""

import dataclasses
import random

from fedfit.devices.catalogue import tier
from fedfit.devices.consumption import with_consumption
from fedfit.types import DeviceState, Link, Thermal


def test_consumption_equals_replacing_the_battery_and_online_fields_on_random_states() -> None:
    rng = random.Random(5)
    phone = tier("midrange_phone")
    assert phone.battery_capacity_j is not None
    for _ in range(500):
        state = DeviceState(rng.randrange(2**32), rng.random(), rng.choice([None, True, False]),
                            rng.choice([None, rng.uniform(10, 50)]), rng.choice(list(Thermal)),
                            rng.choice(list(Link)), rng.random() * 1e8, rng.random() < 0.7,
                            rng.choice([None, rng.random()]))
        used = rng.choice([0.0, rng.random() * phone.battery_capacity_j])
        assert state.battery_fraction is not None
        level = max(0.0, state.battery_fraction - used / phone.battery_capacity_j)
        expected = state if used == 0 else dataclasses.replace(state, battery_fraction=level,
                                                               online=state.online and level > 0)
        assert with_consumption(state, phone, used) == expected
