"""The ``fedfit`` command ends without the interpreter's teardown, but with everything observable
its exit does: threads waited for, ``atexit`` handlers run, buffered output written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ENDING = """
import atexit, sys, threading, time
from pathlib import Path
from fedfit.entry import exit_now

out = Path(sys.argv[1])
atexit.register(lambda: (out / "first.txt").write_text("registered first, runs last"))
atexit.register(lambda: (out / "order.txt").write_text(str((out / "first.txt").exists())))

def late() -> None:
    time.sleep(0.3)
    (out / "thread.txt").write_text("done")

threading.Thread(target=late).start()
threading.Thread(target=time.sleep, args=(60,), daemon=True).start()  # a daemon is not waited for
sys.stdout.write("buffered, not flushed")
sys.stderr.write("also buffered")
exit_now(3)
"""


def _end(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    return subprocess.run([sys.executable, "-c", ENDING, str(tmp_path)], capture_output=True, text=True, env=env,
                          timeout=30)


def test_the_status_the_output_the_threads_and_the_exit_handlers_all_survive(tmp_path: Path) -> None:
    proc = _end(tmp_path)

    assert proc.returncode == 3
    assert proc.stdout == "buffered, not flushed" and proc.stderr == "also buffered"
    assert (tmp_path / "thread.txt").read_text() == "done"
    assert (tmp_path / "first.txt").is_file() and (tmp_path / "order.txt").read_text() == "False"  # last first


def test_under_a_profiler_the_command_returns_so_the_profile_is_written(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    profile = tmp_path / "run.prof"
    proc = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(profile), "-m", "fedfit.entry", "run",
                           str(tmp_path / "absent.yaml")], capture_output=True, text=True, env=env, timeout=300)

    assert "file not found" in proc.stderr  # the command ran (cProfile swallows its exit status)
    assert profile.is_file() and profile.stat().st_size > 0


LEFT_OPEN = """
import concurrent.futures, sys
from pathlib import Path
from fedfit.entry import exit_now

out = Path(sys.argv[1])
pool = concurrent.futures.ThreadPoolExecutor(2)  # never shut down: its idle workers wait on a queue
pool.submit(sum, [1, 2]).result()
text = open(out / "text.txt", "w")  # never closed: the bytes sit in the wrappers' buffers
text.write("written at exit")
raw = open(out / "bytes.bin", "wb")
raw.write(b"\\x00\\x01")
exit_now(0)
"""


def test_a_pool_left_running_and_files_left_open_end_as_the_interpreter_would(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    proc = subprocess.run([sys.executable, "-c", LEFT_OPEN, str(tmp_path)], capture_output=True, text=True, env=env,
                          timeout=60)

    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "text.txt").read_text() == "written at exit"
    assert (tmp_path / "bytes.bin").read_bytes() == b"\x00\x01"
