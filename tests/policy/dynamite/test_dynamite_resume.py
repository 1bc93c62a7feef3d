"""A DYNAMITE run killed and resumed continues with the same estimates, drift factor and plans:
the resumed run equals the unbroken one, event for event."""

from __future__ import annotations

from pathlib import Path

import pytest

from fedfit.runner import resume, run
from fedfit.simulation import checkpoint
from tests.policy.dynamite.test_dynamite_end_to_end import small
from tests.helpers import Killed, kill_after
from tests.test_resume_end_to_end import _assert_same_run

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_dynamite_run_killed_and_resumed_equals_the_unbroken_run(mode: str, tmp_path: Path) -> None:
    config = small(orchestration={"rounds": 7, "clients_per_round": 4, "mode": mode},
                   output={"plots": False, "progress": False, "checkpoint_every": 2})
    run(config, tmp_path / "unbroken")
    with pytest.raises(Killed):
        run(config, tmp_path / "resumed", kill_after(4))  # round 4 logged; last checkpoint after 4 rounds
    assert checkpoint.load(tmp_path / "resumed").rounds_done == 4

    resume(tmp_path / "resumed")

    _assert_same_run(tmp_path / "resumed", tmp_path / "unbroken")
