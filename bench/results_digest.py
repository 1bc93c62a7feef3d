"""A digest of each of twelve small runs: ``events.jsonl``, ``metrics.jsonl`` without
``wall_time_s`` and the final model's bytes, so two trees can be checked to give the same runs.

Configs: sync; deadline + over-selection with late updates ``stale`` (max staleness 1) and
``drop``; async FedBuff and FedAsync; secure aggregation; the process executor; capability
widths (sub-models); dynamic batching; FedNova with participation and q-FFL weights; median
with sign-flip attackers; a 20,000-device lazy fleet with 300 per round and a deadline.

    PYTHONPATH=src python bench/results_digest.py [NAME ...]
"""
import hashlib, json, sys, tempfile
from pathlib import Path
from fedfit.config import parse_config
from fedfit.runner import run

def base(n=300, k=40, rounds=4):
    t = n // 3
    return {"seed": 3, "model": {"name": "logreg"},
            "data": {"dataset": "synthetic", "partition": {"kind": "natural"}, "max_train_samples": 6000, "max_test_samples": 200},
            "fleet": {"tiers": {"flagship_phone": t, "midrange_phone": t, "older_phone": n - 2 * t}},
            "training": {"batch_size": 16, "max_steps": 3},
            "orchestration": {"rounds": rounds, "clients_per_round": k},
            "output": {"plots": False, "progress": False}}

def merge(d, o):
    d = json.loads(json.dumps(d))
    for key, v in o.items():
        cur = d
        parts = key.split(".")
        for p in parts[:-1]:
            cur = cur.setdefault(p, {})
        cur[parts[-1]] = v
    return d

CONFIGS = {
    "sync": {},
    "deadline_stale": {"orchestration.deadline_s": 8.0, "orchestration.over_selection": 0.3, "orchestration.late_updates": "stale", "orchestration.max_staleness": 1},
    "deadline_drop": {"orchestration.deadline_s": 8.0, "orchestration.over_selection": 0.5},
    "fedbuff": {"orchestration.mode": "async", "asynchronous.algorithm": "fedbuff", "asynchronous.buffer_size": 10, "asynchronous.concurrency": 20, "orchestration.rounds": 8},
    "fedasync": {"orchestration.mode": "async", "asynchronous.algorithm": "fedasync", "asynchronous.concurrency": 10, "orchestration.rounds": 20},
    "secagg": {"privacy.secure_aggregation.enabled": True, "orchestration.clients_per_round": 10},
    "process": {"simulation.executor": "process", "simulation.workers": 2},
    "width": {"model.name": "mlp", "width.mode": "capability", "data.dataset": "digits", "data.partition": {"kind": "iid"}, "data.max_train_samples": None, "fleet.catalogue": "scaled", "fleet.tiers": {"flagship_phone": 20, "older_phone": 20, "smartwatch": 20}, "orchestration.clients_per_round": 20},
    "dynamic": {"batching.mode": "dynamic", "model.name": "mlp", "data.dataset": "digits", "data.partition": {"kind": "iid"}, "data.max_train_samples": None, "fleet.catalogue": "scaled", "fleet.tiers": {"flagship_phone": 20, "older_phone": 20, "smartwatch": 20}, "orchestration.clients_per_round": 20},
    "fednova_part": {"aggregation.fednova": True, "aggregation.participation.kind": "interval", "aggregation.fairness_q": 1.0},
    "robust": {"aggregation.robust.rule": "median", "attack.kind": "sign_flip", "attack.fraction": 0.1},
    "lazy_big": {"fleet.tiers": {"flagship_phone": 7000, "midrange_phone": 7000, "older_phone": 6000}, "orchestration.clients_per_round": 300, "orchestration.over_selection": 0.2, "orchestration.deadline_s": 12.0, "data.pool": 500},
}

names = sys.argv[1:] or list(CONFIGS)
for name in names:
    cfg = parse_config(merge(base(), CONFIGS[name]))
    with tempfile.TemporaryDirectory() as d:
        res = run(cfg, Path(d) / "run")
        h = hashlib.sha256()
        rd = Path(d) / "run"
        h.update((rd / "events.jsonl").read_bytes())
        for line in (rd / "metrics.jsonl").read_text().splitlines():
            m = json.loads(line); m.pop("wall_time_s", None); h.update(json.dumps(m, sort_keys=True).encode())
        for k in sorted(res.params):
            h.update(k.encode()); h.update(res.params[k].contiguous().numpy().tobytes())
        nev = len((rd / "events.jsonl").read_text().splitlines())
        print(name, nev, res.reports[-1].accuracy, h.hexdigest()[:16], flush=True)
