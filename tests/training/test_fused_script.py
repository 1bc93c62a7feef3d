"""The plain-SGD trainer step runs as one call that releases the interpreter lock: the number of
Python-level calls into torch a step makes does not grow with its micro-batches (each micro-batch
in Python made some forty, holding the lock between them), and the step leaves the caller's
TorchScript settings as they were. Its results are checked bit for bit against autograd and
PyTorch's SGD in ``test_fused.py``."""

from __future__ import annotations

import sys
from types import FrameType
from typing import Any

import torch

from fedfit.models import ModelSpec
from fedfit.training.fused import fused_steps
from fedfit.training.optimizers import EagerSGD


def _calls_into_c(micro: int, batch: int) -> int:
    """The C functions Python calls during one whole step over ``batch`` samples in micro-batches of ``micro``."""
    model = ModelSpec("mlp", (1, 28, 28), 10).build(0.5)
    steps = fused_steps(model, EagerSGD(model.parameters(), lr=0.1, weight_decay=1e-3))
    assert steps is not None and steps[1] is not None
    whole = steps[1]
    gen = torch.Generator().manual_seed(0)
    x, y = torch.randn((batch, 1, 28, 28), generator=gen), torch.randint(0, 10, (batch,), generator=gen)
    idx = torch.arange(batch)
    whole(x, y, idx, micro)  # compiled on first use, outside the count
    calls = 0

    def count(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal calls
        calls += event == "c_call"

    sys.setprofile(count)
    try:
        whole(x, y, idx, micro)
    finally:
        sys.setprofile(None)
    return calls


def test_a_step_calls_torch_from_python_a_fixed_number_of_times() -> None:
    one, eight = _calls_into_c(micro=48, batch=48), _calls_into_c(micro=6, batch=48)
    assert one == eight  # every micro-batch runs inside the one call
    assert one < 20


def test_the_step_leaves_the_graph_executor_setting_as_it_was() -> None:
    model = ModelSpec("logreg", (1, 28, 28), 10).build()
    steps = fused_steps(model, EagerSGD(model.parameters(), lr=0.1))
    assert steps is not None and steps[1] is not None
    x, y = torch.randn((8, 1, 28, 28)), torch.randint(0, 10, (8,))
    for setting in (True, False):
        torch._C._set_graph_executor_optimize(setting)
        try:
            steps[1](x, y, torch.arange(8), 4)
            assert torch._C._get_graph_executor_optimize() is setting
        finally:
            torch._C._set_graph_executor_optimize(True)


def _trained(monkeypatch: Any, scripted: bool) -> tuple[list[float], list[torch.Tensor]]:
    from fedfit.training import fused_script

    if not scripted:  # a torch that cannot script the step
        monkeypatch.setattr(fused_script, "_compiled", lambda: None)
    torch.manual_seed(0)
    model = ModelSpec("mlp", (1, 28, 28), 10).build(0.5)
    steps = fused_steps(model, EagerSGD(model.parameters(), lr=0.05, weight_decay=1e-3))
    assert steps is not None and steps[1] is not None
    gen = torch.Generator().manual_seed(3)
    x, y = torch.randn((40, 1, 28, 28), generator=gen), torch.randint(0, 10, (40,), generator=gen)
    losses = [steps[1](x, y, torch.randperm(40, generator=gen)[:24], 8) for _ in range(3)]
    monkeypatch.undo()
    return losses, [p.detach().clone() for p in model.parameters()]


def test_without_torchscript_the_step_runs_from_python_with_the_same_bits(monkeypatch: Any) -> None:
    script_losses, script_weights = _trained(monkeypatch, scripted=True)
    python_losses, python_weights = _trained(monkeypatch, scripted=False)
    assert python_losses == script_losses
    assert all(torch.equal(a, b) for a, b in zip(python_weights, script_weights, strict=True))
    assert python_losses[0] != python_losses[2]  # it trained
