"""A round's array paths against the one-by-one ones they replace: results built together
(``results_of``) against ``result_of``, a fleet's ``dispatch_many`` against ``dispatch`` per plan,
and an exchange's ``outgoing_many`` against ``outgoing`` per plan, on random inputs."""

from __future__ import annotations

import random

import pytest
import torch

from fedfit.cost import MemoryModel, ModelCost
from fedfit.devices.catalogue import tier
from fedfit.orchestration.dispatching import send_all
from fedfit.orchestration.submodels import FullModelExchange, SubModelExchange
from fedfit.models import MLP
from fedfit.models.coordinates import width_groups
from fedfit.simulation.fleet import SimulatedFleet
from fedfit.simulation.in_flight import InFlight, result_of, results_of
from fedfit.types import DeviceState, Failure, FailureCause, Link, TaskCost, Thermal, TrainPlan, Update


def _item(rng: random.Random, device: int) -> tuple[InFlight, Update | Failure]:
    plan = TrainPlan(device, rng.randrange(4), rng.choice([8, 16, 32]))
    cost = TaskCost(rng.random(), rng.random(), rng.random(), rng.random(), rng.randrange(1 << 40), 7, 7, rng.random())
    start = rng.uniform(0, 100)
    if rng.random() < 0.3:
        failure = Failure(device, plan.round, rng.choice(list(FailureCause)), "why")
        return InFlight(plan, rng.choice(["a", "b"]), start, start + 1, failure, cost, rng.randrange(1 << 33),
                        None, None), failure
    update = Update(device, plan.round, {}, 10, 10, 1, 16, 1, rng.random())
    return InFlight(plan, "a", start, start + 2, None, cost, rng.randrange(1 << 33), None, None), update


@pytest.mark.parametrize("n", [0, 1, 2, 17, 500])
def test_results_built_together_equal_one_by_one(n: int) -> None:
    rng = random.Random(n)
    pairs = [_item(rng, d) for d in range(n)]
    items, outcomes = [p[0] for p in pairs], [p[1] for p in pairs]
    expected = [result_of(item, None if isinstance(o, Failure) else o) for item, o in pairs]
    got = results_of(items, list(outcomes))
    assert got == expected
    assert all(g.outcome is o and g.plan is item.plan and g.cost is item.cost for g, item, o in zip(got, items, outcomes))


class _Executor:
    def __init__(self) -> None:
        self.submitted: list[object] = []

    def submit(self, task: object) -> object:
        self.submitted.append(task)
        return self

    def result(self) -> Update:
        raise AssertionError("not trained here")

    def cancel(self) -> bool:
        return True

    def close(self) -> None:
        return None


class _Trace:
    def __init__(self, device: int) -> None:
        self.device = device

    def state_at(self, t: float) -> DeviceState:
        rng = random.Random(self.device * 1000 + int(t))
        return DeviceState(rng.randrange(1 << 28, 1 << 33), rng.random(), rng.random() < 0.3, 30.0,
                           Thermal.NOMINAL, Link.WIFI, rng.uniform(-1e5, 5e7), rng.random() < 0.8)


def _fleet(n: int) -> SimulatedFleet:
    profiles = [tier(name) for name in ("flagship_phone", "midrange_phone", "smartwatch")]
    return SimulatedFleet(profiles=[profiles[d % 3] for d in range(n)], traces=[_Trace(d) for d in range(n)],
                          num_examples=[10 + d % 50 for d in range(n)],
                          costs=lambda w: ModelCost(7850, 31400, 47100.0, 15700.0, 40.0, 0.0),
                          memory=MemoryModel(), executor=_Executor())


def _queued(fleet: SimulatedFleet) -> list[tuple[float, tuple[object, ...]]]:
    state = fleet.state()
    return [(p.at_s, (p.result, p.task)) for p in state.pending] + [(0.0, state.consumed_j)]


@pytest.mark.parametrize("seed", range(6))
def test_dispatch_many_equals_dispatch_one_by_one(seed: int) -> None:
    rng = random.Random(seed)
    n = 120
    params = {"w": torch.zeros(3)}
    one, many = _fleet(n), _fleet(n)
    now = 0.0
    for r in range(3):
        idle = [d for d in range(n) if not one.busy(d)]
        assert idle == [d for d in range(n) if not many.busy(d)]
        devices = rng.sample(idle, min(len(idle), rng.randrange(1, 40)))
        checked = rng.sample(devices, len(devices) // 2)  # some checked in first (dispatch reads them again)
        assert one.snapshot_many(checked, now) == many.snapshot_many(checked, now)
        plans = [TrainPlan(d, r, rng.choice([8, 16]), max_steps=rng.choice([None, 3])) for d in devices]
        for plan in plans:
            one.dispatch(plan, params, now)
        many.dispatch_many(plans, [params] * len(plans), now)
        assert _queued(one) == _queued(many)
        assert [one.busy(d) for d in range(n)] == [many.busy(d) for d in range(n)]
        now += rng.choice([30.0, 600.0])
    assert _queued(one) == _queued(many)


def test_dispatch_many_with_a_repeated_device_flushes_as_dispatch_does() -> None:
    one, many = _fleet(10), _fleet(10)
    plans = [TrainPlan(3, 0, 16), TrainPlan(4, 0, 16), TrainPlan(3, 1, 16)]
    for plan in plans:
        one.dispatch(plan, {}, 5.0)
    many.dispatch_many(plans, [{}] * 3, 5.0)
    assert _queued(one) == _queued(many)


def _exchange() -> SubModelExchange:
    groups = width_groups(MLP(2, 2, hidden=4))
    return SubModelExchange(groups, lambda w: {g.name: g.size for g in width_groups(MLP(2, 2, w, hidden=4))},
                            indices="random", seed=3)


def test_outgoing_many_equals_outgoing_one_by_one() -> None:
    rng = random.Random(5)
    master = {k: v.detach().clone() for k, v in MLP(2, 2, hidden=4).state_dict().items()}
    one, many = _exchange(), _exchange()
    for r in range(4):
        plans = [TrainPlan(rng.randrange(30), r, 16, width=rng.choice([1.0, 1.0, 0.5, 0.25])) for _ in range(40)]
        expected = [one.outgoing(plan, master) for plan in plans]
        got = many.outgoing_many(plans, master)
        for plan, a, b in zip(plans, got, expected):
            assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
            if plan.width == 1.0:  # the master's own tensors, as outgoing sends them
                assert all(a[k] is master[k] for k in a)
        sent_one, sent_many = one.state().pending, many.state().pending
        assert sent_one.keys() == sent_many.keys()
        assert all({g: i.tolist() for g, i in sent_one[k].kept.items()} ==
                   {g: i.tolist() for g, i in sent_many[k].kept.items()} for k in sent_one)
        assert one._rounds == many._rounds


def test_outgoing_many_of_full_width_plans_remembers_them_together_as_one_by_one() -> None:
    """Every plan full-width, one per device (the together path): the same payload (the master's
    tensors) and the same sub-models remembered, in the same order, with earlier tasks of a
    device forgotten and returned updates taken back."""
    rng = random.Random(6)
    master = {k: v.detach().clone() for k, v in MLP(2, 2, hidden=4).state_dict().items()}
    one, many = _exchange(), _exchange()
    for r in range(6):
        plans = [TrainPlan(d, r, 16) for d in rng.sample(range(30), 12)]
        for plan in plans:
            one.outgoing(plan, master)
        got = many.outgoing_many(plans, master)
        assert all(p is got[0] for p in got) and all(got[0][k] is master[k] for k in master)
        assert [(k, v.kept) for k, v in one.state().pending.items()] == \
            [(k, v.kept) for k, v in many.state().pending.items()]
        assert one._rounds == many._rounds
        for plan in rng.sample(plans, 5):  # some updates come back: their sub-models are forgotten
            update = Update(plan.device_id, plan.round, dict(master), 16, 16, 1, 16, 1, 0.5)
            assert (one._take(update) is None) == (many._take(update) is None) is False


class _Recording:
    """A fleet without ``dispatch_many`` (read one plan at a time) and an exchange without ``outgoing_many``."""

    def __init__(self) -> None:
        self.sent: list[tuple[int, object, float]] = []

    def dispatch(self, plan: TrainPlan, params: object, now_s: float) -> None:
        self.sent.append((plan.device_id, params, now_s))

    def outgoing(self, plan: TrainPlan, master: dict[str, torch.Tensor]) -> object:
        return ("payload", plan.device_id)


def test_send_all_falls_back_to_one_plan_at_a_time() -> None:
    fake = _Recording()
    plans = [TrainPlan(d, 0, 16) for d in (5, 2, 9)]
    send_all(fake, fake, plans, {}, 3.0)  # type: ignore[arg-type]
    assert fake.sent == [(5, ("payload", 5), 3.0), (2, ("payload", 2), 3.0), (9, ("payload", 9), 3.0)]
    master = {"w": torch.zeros(1)}
    assert all(p is master for p in FullModelExchange().outgoing_many(plans, master))
