"""(helper flw15c; the code before in /tmp/flw-ref: `git archive 4f59020 src | tar -x -C /tmp/flw-ref`) Paired A/B in one process: a round's fold (10 MLP updates) and channel statistics, before vs now."""
import importlib.util, sys, time, statistics, os, torch
torch.set_num_threads(1)
def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path); m = importlib.util.module_from_spec(spec); sys.modules[name] = m; spec.loader.exec_module(m); return m
import fedfit.aggregation.average as A, fedfit.models.channel_stats as C
from fedfit.aggregation import Contribution
from fedfit.models import ModelSpec
from fedfit.models.coordinates import CoordinateMap, width_groups
rA = load("ref_avg", "/tmp/flw-ref/src/fedfit/aggregation/average.py"); rC = load("ref_cs", "/tmp/flw-ref/src/fedfit/models/channel_stats.py")
model = ModelSpec("mlp", (1, 28, 28), 10).build(); groups = width_groups(model); cmap = CoordinateMap(groups, {})
g = torch.Generator().manual_seed(0)
master = {k: v.detach().clone() for k, v in model.state_dict().items()}
ups = [{k: v + 0.01 * torch.randn(v.shape, generator=g) for k, v in master.items()} for _ in range(10)]
def run(avg, cs):
    stats = cs.ChannelStats.empty(groups)
    c = time.process_time()
    for u in ups: stats = cs.accumulate(stats, groups, master, u, cmap, 600.0)
    out = avg.masked_weighted_average(master, [Contribution(u, 600.0) for u in ups])
    return time.process_time() - c, out, stats
res = {"old": [], "new": []}
for r in range(int(sys.argv[1])):
    for name, mods in ((("old", (rA, rC)), ("new", (A, C))) if r % 2 else (("new", (A, C)), ("old", (rA, rC)))):
        res[name].append(run(*mods)[0])
o1, s1 = run(rA, rC)[1:]; o2, s2 = run(A, C)[1:]
same = all(torch.equal(o1[k], o2[k]) for k in o1) and all(torch.equal(s1.scores[k], s2.scores[k]) for k in s1.scores)
for k in res: print(k, "median CPU ms per round of 10 updates %.2f" % (1000 * statistics.median(res[k])))
print("paired median new/old %.3f, bit-identical: %s, load %.1f" % (statistics.median(n / o for n, o in zip(res["new"], res["old"])), same, os.getloadavg()[0]))
