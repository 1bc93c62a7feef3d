"""Techniques that cannot be combined are rejected with one line."""

import pytest
import torch
from torch.nn.utils import parametrize

from fedfit.errors import PlanError
from fedfit.training import train
from fedfit.training.techniques import check_techniques
from fedfit.types import Techniques, TrainPlan


def test_composable_techniques_pass() -> None:
    check_techniques(Techniques(checkpointing=True, train_stages=(2, 3), qat_bits=8), 4)


@pytest.mark.parametrize("t, words", [
    (Techniques(keep_fraction=0.5, checkpointing=True), "partial cannot be combined with checkpointing"),
    (Techniques(split_cut=2, qat_bits=8), "split cannot be combined with qat"),
    (Techniques(sparsity=0.5, keep_fraction=0.5), "partial cannot be combined with pruning"),
    (Techniques(split_cut=4), "split cut must be in 1..3"),
])
def test_impossible_plans_raise_one_line(t: Techniques, words: str) -> None:
    with pytest.raises(PlanError, match=words) as err:
        check_techniques(t, 4)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("t", [Techniques(keep_fraction=0.5), Techniques(qat_bits=8, train_stages=(3,)),
                               Techniques(progressive_stage=1), Techniques(sparsity=0.5)])
def test_technique_tasks_leave_the_module_as_they_found_it(cnn_task, t: Techniques) -> None:
    model, params, x, y = cnn_task
    train(model, params, x, y, TrainPlan(0, 0, 8, techniques=t), seed=0)
    assert all(p.requires_grad for p in model.parameters())
    assert not any(parametrize.is_parametrized(m) for m in model.modules())
    assert not any(getattr(p, "_post_accumulate_grad_hooks", None) for p in model.parameters())
    plain = train(model, params, x, y, TrainPlan(0, 0, 8), seed=0)
    model2 = type(model)(1, 8, 4)
    fresh = train(model2, params, x, y, TrainPlan(0, 0, 8), seed=0)
    assert all(torch.equal(plain.params[k], fresh.params[k]) for k in params)
