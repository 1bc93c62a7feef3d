"""(helper flw15c; the code before in /tmp/flw-ref: `git archive 4f59020 src | tar -x -C /tmp/flw-ref`) Paired A/B in one process: the code before (ref's trainer._step, fused step, EagerSGD.step) vs now. Runs in the tree it measured (`git checkout ad152ff`): since flw15h the trainer takes `fused_steps` and a whole SGD step, which `bench/trainer_step_ab.py` measures."""
import importlib.util, time, torch, statistics, os, sys
torch.set_num_threads(1)
import fedfit.training.trainer as T, fedfit.training.techniques as TQ, fedfit.training.optimizers as O
from fedfit.models import ModelSpec
from fedfit.types import TrainPlan
def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path); m = importlib.util.module_from_spec(spec); sys.modules[name] = m; spec.loader.exec_module(m); return m
ref = "/tmp/flw-ref/src/fedfit/training/"
rf, rt, ro = load("ref_fused", ref + "fused.py"), load("ref_trainer", ref + "trainer.py"), load("ref_opt", ref + "optimizers.py")
new = (T._step, TQ.fused_step, O.EagerSGD.step)
old = (rt._step, rf.fused_step, ro.EagerSGD.step)
def use(v): T._step, TQ.fused_step, O.EagerSGD.step = v
spec = ModelSpec("mlp", (1, 28, 28), 10)
g = torch.Generator().manual_seed(0)
N = int(sys.argv[2]) if len(sys.argv) > 2 else 600
x = torch.randn(N, 1, 28, 28, generator=g); y = torch.randint(0, 10, (N,), generator=g)
torch.manual_seed(0); model = spec.build(); params = {k: v.clone() for k, v in model.state_dict().items()}
res = {"old": [], "new": []}
for r in range(int(sys.argv[1])):
    outs = {}
    for name, v in (("old", old), ("new", new)) if r % 2 else (("new", new), ("old", old)):
        use(v); c = time.process_time(); w = time.perf_counter()
        u = T.train(model, params, x, y, TrainPlan(1, r, micro_batch=32, local_epochs=1, lr=0.05), seed=0)
        res[name].append((time.process_time() - c, time.perf_counter() - w)); outs[name] = u
    assert all(torch.equal(outs["old"].params[k], outs["new"].params[k]) for k in outs["old"].params)
for k in res:
    print(k, "median CPU ms/update %.2f  wall %.2f" % (1000 * statistics.median(t[0] for t in res[k]), 1000 * statistics.median(t[1] for t in res[k])))
ratios = [n[0] / o[0] for n, o in zip(res["new"], res["old"])]
print("paired median new/old CPU %.3f  load %.1f  (bit-identical updates: yes)" % (statistics.median(ratios), os.getloadavg()[0]))
