"""Where a round of the Flower side by side's fedfit row goes: the driver's phases against the
training lanes (pool workers, threads, or the driver itself for ``local``), per round, median
over rounds 2..N (round 1 pays the cost model's one-off measurement and the pool's start).

Times every ``Workload.run`` and ``ThreadExecutor._train`` (a task's training, in whichever
process or thread runs it: forked pool workers inherit the patch) and the sync loop's ``_run_round`` (plan, dispatch, collect),
``_aggregate`` and ``_maybe_evaluate`` in the driver, all on ``time.perf_counter`` (one monotonic
clock across processes), and each task's thread CPU time. Reports:

- ``round wall``: one round start to the next.
- ``serial tail``: the last task's end to the next round's start (no task training: the results
  read, costed, aggregated, the model evaluated, the next round planned and dispatched).
- ``aggregate`` / ``evaluate``: those phases alone (inside the tail).
- ``dispatch -> first task``: the round's start to its first task's start.
- ``lane busy`` / ``lane idle``: per training lane, the sum of its tasks' wall time, and the
  round's wall less that (waiting for the driver, or for a task).
- ``task wall`` / ``task CPU``: one task's training, wall and thread CPU.

    OMP_NUM_THREADS=1 PYTHONPATH=src python bench/round_timeline.py process   # or threads, local

It runs the side by side's job (``flower_side_by_side.fedfit_config``, same defaults) in this
process; the instrument adds two clock reads and one line of a file per task.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any


def instrument(log: Path) -> None:
    """Patch the workload and the sync loop to append ``[kind, lane, t0, t1, cpu]`` lines to ``log``."""
    from fedfit.orchestration import sync
    from fedfit.simulation import threaded, workload

    def write(row: list[Any]) -> None:
        with open(log, "a") as fh:  # one short append per task: lines from several processes stay whole
            fh.write(json.dumps(row) + "\n")

    def timed_task(run: Any) -> Any:
        def timed_run(self: Any, task: Any, *rest: Any) -> Any:
            c0, t0 = time.thread_time(), time.perf_counter()
            out = run(self, task, *rest)
            t1, c1 = time.perf_counter(), time.thread_time()
            write(["task", f"{os.getpid()}/{threading.get_ident()}", t0, t1, c1 - c0])
            return out
        return timed_run

    workload.Workload.run = timed_task(workload.Workload.run)  # type: ignore[method-assign]
    threaded.ThreadExecutor._train = timed_task(threaded.ThreadExecutor._train)  # type: ignore[method-assign]
    for name in ("_run_round", "_aggregate", "_maybe_evaluate"):
        def timed(*a: Any, _f: Any = getattr(sync.SyncOrchestrator, name), _n: str = name, **k: Any) -> Any:
            t0 = time.perf_counter()
            out = _f(*a, **k)
            write([_n, "driver", t0, time.perf_counter(), 0.0])
            return out
        setattr(sync.SyncOrchestrator, name, timed)


def per_round(rows: list[list[Any]]) -> dict[str, list[float]]:
    """Each figure of rounds 2..N-1 (a round is measured up to the next one's start)."""
    starts = [r[2] for r in rows if r[0] == "_run_round"]
    tasks = [r for r in rows if r[0] == "task"]
    lanes = sorted({r[1] for r in tasks})
    got: dict[str, list[float]] = {}
    for start, end in zip(starts[1:], starts[2:]):
        mine = [t for t in tasks if start <= t[2] < end]
        phase = {r[0]: r[3] - r[2] for r in rows if r[0] != "task" and start <= r[2] < end}
        busy = [sum(t[3] - t[2] for t in mine if t[1] == lane) for lane in lanes]
        figures = {"round wall": end - start, "serial tail": end - max(t[3] for t in mine),
                   "aggregate": phase["_aggregate"], "evaluate": phase["_maybe_evaluate"],
                   "dispatch -> first task": min(t[2] for t in mine) - start,
                   "lane busy": statistics.mean(busy), "lane idle": statistics.mean(end - start - b for b in busy),
                   "task wall": statistics.mean(t[3] - t[2] for t in mine),
                   "task CPU": statistics.mean(t[4] for t in mine)}
        for key, value in figures.items():
            got.setdefault(key, []).append(value)
    return got


def main() -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    import flower_side_by_side as side  # sets OMP_NUM_THREADS=1 for this process, as the side by side does

    executor = sys.argv[1] if len(sys.argv) > 1 else "process"
    args, _ = side.parse(["--side", "fedfit"])
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "timeline.jsonl"
        log.touch()
        instrument(log)
        result = side.run_fedfit(args, executor)
        rows = [json.loads(line) for line in log.read_text().splitlines()]
    print(f"{executor}: {result['updates']} updates, loop {result['loop_s']:.2f} s, "
          f"{result['loop_s'] / result['updates']:.4f} s/update; load average {os.getloadavg()[0]:.1f}")
    for key, values in per_round(rows).items():
        print(f"  {key:<24} median {1000 * statistics.median(values):7.1f} ms")


if __name__ == "__main__":
    main()
