"""(helper flw15c; the code before in /tmp/flw-ref: `git archive 4f59020 src | tar -x -C /tmp/flw-ref`) Paired A/B in one process: the FLUTE fleet's traces (1,000 devices, one CSV), fleet_traces before vs now."""
import importlib.util, sys, time, statistics, os, tempfile
from pathlib import Path
sys.path.insert(0, str(__import__('pathlib').Path(__file__).parent))
import flower_side_by_side as fs
def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path); m = importlib.util.module_from_spec(spec); sys.modules[name] = m; spec.loader.exec_module(m); return m
import numpy as np
import fedfit.inputs as I
R = load("ref_inputs", "/tmp/flw-ref/src/fedfit/inputs.py")
args, _ = fs.parse(["--clients", "1000", "--rounds", "100"])
tmp = tempfile.mkdtemp(); trace = Path(tmp) / "a.csv"; trace.write_text(fs.ALWAYS_ON)
cfg = fs.fedfit_config(args, str(trace), "local"); profiles = I.fleet_profiles(cfg)
res = {"old": [], "new": []}
for r in range(int(sys.argv[1])):
    for name, f in ((("old", R.fleet_traces), ("new", I.fleet_traces)) if r % 2 else (("new", I.fleet_traces), ("old", R.fleet_traces))):
        c = time.process_time(); out = f(cfg, profiles); res[name].append(time.process_time() - c); outs = locals().setdefault("o", {}); outs[name] = out
    a, b = outs["old"], outs["new"]
    assert all(np.array_equal(getattr(x, k), getattr(y, k), equal_nan=True) for x, y in zip(a, b) for k in ("free_memory_bytes", "link", "online", "temperature_c", "bandwidth_bps", "cpu_utilisation"))
for k in res: print(k, "median CPU s %.3f" % statistics.median(res[k]))
print("paired median new/old %.3f, traces equal: yes, load %.1f" % (statistics.median(n / o for n, o in zip(res["new"], res["old"])), os.getloadavg()[0]))
