"""Alternate whole-process runs of a few commands (say, one side of bench/flower_side_by_side.py
on two source trees) and report each one's whole-process wall time, CPU seconds and seconds per
update, median and minimum over the repeats, with the load average at each start, and the
seconds outside the child's round loop (whole process − loop: interpreter, imports, reading the
data, building the experiment, exit), where the loop's noise does not hide start-up changes.

Each command runs as a child through the shell, in turn, ``N`` times; its CPU seconds (user +
system) come from ``getrusage(RUSAGE_CHILDREN)``, which includes the processes it waited for
(pool workers); it must print the side by side child's ``RESULT {json}`` line (``--side ...``).

    python bench/ab_runs.py 3 \\
        main "cd /tmp/ref && OMP_NUM_THREADS=1 PYTHONPATH=src python bench/flower_side_by_side.py --side fedfit" \\
        branch "cd /work/tree && OMP_NUM_THREADS=1 PYTHONPATH=src python bench/flower_side_by_side.py --side fedfit"
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import time


def one(command: str) -> tuple[float, float, float, float, float]:
    """(whole-process seconds, CPU seconds, loop seconds per update, final accuracy, seconds
    outside the loop) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run(command, shell=True, capture_output=True, text=True, check=True).stdout
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = json.loads([ln for ln in out.splitlines() if ln.startswith("RESULT ")][-1][7:])
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, result["loop_s"] / result["updates"], result["accuracy"], wall - result["loop_s"]


def main() -> None:
    repeats, pairs = int(sys.argv[1]), list(zip(sys.argv[2::2], sys.argv[3::2], strict=True))
    runs: dict[str, list[tuple[float, float, float, float, float]]] = {label: [] for label, _ in pairs}
    loads = []
    for _ in range(repeats):
        for label, command in pairs:
            loads.append(os.getloadavg()[0])
            runs[label].append(one(command))
    print(f"load average (1 min) at each start: min {min(loads):.1f} median {statistics.median(loads):.1f} "
          f"max {max(loads):.1f}")
    for label, got in runs.items():
        wall, cpu, per, acc, outside = ([r[i] for r in got] for i in range(5))
        print(f"{label:<12} process s med {statistics.median(wall):6.2f} min {min(wall):6.2f} | CPU s med "
              f"{statistics.median(cpu):6.2f} min {min(cpu):6.2f} | s/update med {statistics.median(per):.4f} "
              f"min {min(per):.4f} | outside loop s med {statistics.median(outside):.3f} min {min(outside):.3f} "
              f"max {max(outside):.3f} | acc {sorted(set(acc))}  n={len(got)}")


if __name__ == "__main__":
    main()
