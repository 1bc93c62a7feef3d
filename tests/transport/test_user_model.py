"""A user's model (``model.factory``) and data (``data.loader``) deployed: the server and the
devices build the same user module from the config; one device trains on its shard of the
loader's data, the other on its own ``.npz``."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest

from fedfit.transport.device import DeviceOptions
from tests.transport.test_device import deployed_run, tiny

MODULE = textwrap.dedent('''
    import numpy as np
    from torch import nn

    def build(input_shape, num_classes):
        return nn.Sequential(nn.Flatten(), nn.Linear(int(np.prod(input_shape)), 8), nn.ReLU(),
                             nn.Linear(8, num_classes))

    def load():
        rng = np.random.default_rng(0)
        x = rng.normal(size=(240, 6)).astype("float32")
        y = (x[:, 0] > 0).astype("int64")
        return (x[:200], y[:200]), (x[200:], y[200:])
''')


@pytest.mark.slow
def test_a_device_trains_the_users_model_on_the_users_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "fedfit_user_deploy_mod.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    rng = np.random.default_rng(1)
    x = rng.normal(size=(30, 6)).astype("float32")
    np.savez(tmp_path / "own.npz", x=x, y=(x[:, 0] > 0).astype("int64"))
    raw = tiny(model={"factory": "fedfit_user_deploy_mod:build"}, data={"loader": "fedfit_user_deploy_mod:load"})
    run, codes = deployed_run(tmp_path / "state", raw,
                              [DeviceOptions(shard=(0, 2)), DeviceOptions(data=tmp_path / "own.npz")])
    assert codes == [0, 0] and run.store.progress().version == 2
    examples = sorted(json.loads(r.profile_json)["num_examples"] for r in run.store.devices())
    # its own 30 rows; and shard 0 of the loader's 200 as the server split them (100, less the local test share)
    assert examples == [30, len(run.data.train[0].x)] and 80 <= examples[1] <= 100
    assert len(run.store.journal()) == 4
    assert run.spec.factory is not None and run.spec.factory.label == "fedfit_user_deploy_mod:build"
