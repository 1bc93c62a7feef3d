"""generate_traces (heat walks across devices at once) equals the per-device traces bit for bit,
and both equal the traces of the per-device code before the batching (stored digests)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from fedfit.devices import REALISTIC, DeviceTrace, generate_trace, generate_traces
from fedfit.devices import battery as battery_gen
from fedfit.devices import traces as traces_mod
from fedfit.devices.trace_params import TraceParams
from fedfit.devices.traces import TRACE_ARRAYS

#: sha256 (first 16 hex) of every trace array, from the per-device implementation of commit
#: 4ecf8a6 (before generate_traces), default params and horizon.
OLD_DIGESTS = {
    ("midrange_phone", 0, 0): "4caacea4592bd79c",
    ("midrange_phone", 3, 17): "cd25fc9a1b084c28",
    ("flagship_phone", 0, 0): "3ba19c037c38bee7",
    ("flagship_phone", 3, 17): "54f62b16f59b71ea",
    ("smartwatch", 0, 0): "a72bf0a9a470afb2",
    ("smartwatch", 3, 17): "7fe5e1ee2d5e0cf2",
    ("sensor_mcu", 0, 0): "a3f8396d2e0ca48f",
    ("sensor_mcu", 3, 17): "d2c40fb78ee5557a",
    ("vehicle_computer", 0, 0): "18cf957550e9a371",
    ("vehicle_computer", 3, 17): "f5f34f66cfd31335",
}


def _digest(trace: DeviceTrace) -> str:
    h = hashlib.sha256()
    for name in TRACE_ARRAYS:
        array = getattr(trace, name)
        h.update(name.encode())
        h.update(b"-" if array is None else np.ascontiguousarray(array).tobytes())
    return h.hexdigest()[:16]


def _reference_walk(steady: np.ndarray, noise: np.ndarray, reversion: float) -> np.ndarray:
    """The per-device walk as it was written before the batching (Python floats, step by step)."""
    temps = np.empty(len(steady))
    current = float(steady[0])
    for i in range(len(steady)):
        temps[i] = current
        current += reversion * (float(steady[i]) - current) + float(noise[i])
    return temps


def _same(a: DeviceTrace, b: DeviceTrace) -> bool:
    for name in TRACE_ARRAYS:
        x, y = getattr(a, name), getattr(b, name)
        if (x is None) != (y is None) or (x is not None and (x.dtype != y.dtype or x.tobytes() != y.tobytes())):
            return False
    return True


@pytest.mark.parametrize(("name", "seed", "device"), sorted(OLD_DIGESTS))
def test_traces_match_the_per_device_code_before_batching(name: str, seed: int, device: int) -> None:
    one = generate_trace(REALISTIC[name], seed=seed, device_id=device)
    batched = generate_traces([REALISTIC[name]], [device], seed=seed)[0]
    assert _digest(one) == _digest(batched) == OLD_DIGESTS[(name, seed, device)]


def test_mixed_fleet_over_several_blocks_equals_device_by_device(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(traces_mod, "WALK_BLOCK", 4)
    tiers = list(REALISTIC.values())
    profiles = [tiers[i % len(tiers)] for i in range(11)]
    ids = [3 * i + 1 for i in range(11)]
    params = TraceParams(step_s=600.0)
    batched = generate_traces(profiles, ids, seed=5, params=params, horizon_s=86400.0)
    for profile, device, trace in zip(profiles, ids, batched, strict=True):
        assert _same(trace, generate_trace(profile, seed=5, device_id=device, params=params, horizon_s=86400.0))


def test_heat_walk_rows_equal_the_scalar_walk_bit_for_bit() -> None:
    rng = np.random.default_rng(0)
    steady = 30.0 + 10.0 * rng.random((7, 500))
    noise = rng.normal(0.0, 0.7, size=(7, 500))
    params = TraceParams()
    rows = battery_gen.heat_walk(steady, noise, params)
    for j in range(7):
        assert rows[j].tobytes() == _reference_walk(steady[j], noise[j], params.heat_reversion).tobytes()
        assert battery_gen.heat_walk(steady[j], noise[j], params).tobytes() == rows[j].tobytes()


def test_heat_walk_closes_the_gap_by_the_reversion() -> None:
    params = TraceParams()
    steady = np.array([[10.0, 20.0, 20.0]])
    temps = battery_gen.heat_walk(steady, np.zeros((1, 3)), params)
    r = params.heat_reversion
    # step i reads the walk before step i's update: 10, 10 (steady 10 at step 0), then 10 + r * (20 - 10)
    assert temps[0].tolist() == pytest.approx([10.0, 10.0, 10.0 + r * 10.0])


def test_mismatched_lengths_are_refused() -> None:
    with pytest.raises(ValueError, match="2 profiles for 1 device ids"):
        generate_traces([REALISTIC["smartwatch"]] * 2, [0], seed=0)


CSV_TEXTS = {
    "all": "t_s,link,bandwidth_bps,online,temperature_c\n0,wifi,100000000,true,30\n",
    "online": "t_s,online\n0,true\n600,false\n",
    "network": "t_s,link,bandwidth_bps\n0,cellular,1000000\n",
    "heat": "t_s,temperature_c\n0,25\n3600,41\n",
    "later": "t_s,link,bandwidth_bps,online,temperature_c\n60,wifi,100000000,true,30\n",
}


@pytest.mark.parametrize("name", sorted(CSV_TEXTS))
@pytest.mark.parametrize("tier", ["midrange_phone", "vehicle_computer", "sensor_mcu"])
def test_skipping_what_a_csv_overwrites_gives_the_same_overlaid_trace(tmp_path, name: str, tier: str) -> None:
    from fedfit.devices.csv_trace import columns_from_start, parse_csv_trace

    path = tmp_path / "t.csv"
    text = CSV_TEXTS[name].replace("wifi", "cellular") if tier == "sensor_mcu" else CSV_TEXTS[name]
    path.write_text(text)
    replaced = columns_from_start(path)
    profile = REALISTIC[tier]
    skipped = generate_traces([profile], [4], seed=2, replaced=[replaced])[0]
    full = generate_trace(profile, seed=2, device_id=4)
    assert _same(parse_csv_trace(text, skipped), parse_csv_trace(text, full))


def test_columns_from_start(tmp_path) -> None:
    from fedfit.devices.csv_trace import columns_from_start

    cases = {"t_s,online,link,bandwidth_bps\n0,true,wifi,5\n": {"online", "link", "bandwidth_bps"},
             "t_s,online\n0.0,true\n": {"online"},
             "t_s,online\n60,true\n": set(),     # before the first row the generated values stand
             "t_s,online\n": set(), "": set(), "t_s,online\nzero,true\n": set(), "t_s,online\n0\n": set()}
    for i, (text, expected) in enumerate(cases.items()):
        path = tmp_path / f"{i}.csv"
        path.write_text(text)
        assert columns_from_start(path) == expected, text
    assert columns_from_start(tmp_path / "missing.csv") == frozenset()


def _app_memory_share_spell_by_spell(rng: np.random.Generator, n: int, params: TraceParams) -> np.ndarray:
    """The app-memory generator as it was: each running spell added to its slice on its own."""
    share = np.zeros(n)
    p_end_on = 1.0 / max(params.app_mean_on_s / params.step_s, 1.0)
    p_end_off = 1.0 / max(params.app_mean_off_s / params.step_s, 1.0)
    p_on = params.app_mean_on_s / (params.app_mean_on_s + params.app_mean_off_s)
    for _ in range(params.app_slots):
        start, running = 0, bool(rng.random() < p_on)
        while start < n:
            length = int(rng.geometric(p_end_on if running else p_end_off))
            if running:
                share[start:start + length] += rng.uniform(*params.app_share)
            start, running = start + length, not running
    return share


@pytest.mark.parametrize("params", [TraceParams(), TraceParams(step_s=3600.0), TraceParams(step_s=10.0),
                                    TraceParams(app_slots=7, app_mean_on_s=60.0, app_mean_off_s=120.0)])
def test_app_memory_filled_slot_by_slot_equals_spell_by_spell(params: TraceParams) -> None:
    from fedfit.devices.generators import app_memory_share

    n = int(172800 / params.step_s)
    for device in range(40):
        want = _app_memory_share_spell_by_spell(np.random.default_rng([3, device, 1]), n, params)
        assert app_memory_share(np.random.default_rng([3, device, 1]), n, params).tobytes() == want.tobytes()
