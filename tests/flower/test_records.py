import pytest

pytest.importorskip("flwr", reason="Flower interop needs the extra: pip install fedfit[flower]")

import math

import torch
from flwr.app import Error

from fedfit.flower.records import (FAILURE_CODE, content_update, error_cause, failure_error, readiness_record,
                                   record_readiness, update_content)
from fedfit.policy.readiness import Readiness
from fedfit.types import FailureCause, Thermal, Update


def test_update_survives_the_round_trip_through_flower_records() -> None:
    update = Update(device_id=3, round=7, params={"w": torch.tensor([[1.5, -2.0]]), "b": torch.tensor([0.25])},
                    num_examples=40, samples_processed=80, steps=6, micro_batch=8, accumulation_steps=4,
                    train_loss=0.5, masks={"w": torch.tensor([[True, False]])})

    back = content_update(update_content(update))

    assert (back.device_id, back.round, back.num_examples, back.samples_processed, back.steps) == (3, 7, 40, 80, 6)
    assert (back.micro_batch, back.accumulation_steps, back.train_loss) == (8, 4, 0.5)
    assert torch.equal(back.params["w"], update.params["w"]) and torch.equal(back.params["b"], update.params["b"])
    assert back.masks is not None and torch.equal(back.masks["w"], torch.tensor([[True, False]]))


def test_readiness_keeps_unknowns_unknown_and_an_unreachable_duration_infinite() -> None:
    ready = Readiness(device_id=2, tier="smartwatch", affordable_batch=13, planned_batch=8,
                      predicted_duration_s=math.inf, battery_fraction=None, charging=None,
                      thermal=Thermal.WARM, online=True)

    back = record_readiness(readiness_record(ready))

    assert back == ready


def test_a_fedfit_failure_names_its_cause_and_any_other_error_is_a_client_error() -> None:
    assert error_cause(failure_error(FailureCause.OUT_OF_MEMORY, "peak 9 B > free 8 B")) == "out_of_memory"
    assert error_cause(Error(code=FAILURE_CODE, reason="nonsense: x")) == "client_error"
    assert error_cause(Error(code=0, reason="out_of_memory: raised by a plain client")) == "client_error"


def test_the_received_models_loss_survives_flower_records_and_stays_unknown_when_unreported() -> None:
    update = Update(device_id=1, round=2, params={"w": torch.tensor([1.0])}, num_examples=4, samples_processed=4,
                    steps=1, micro_batch=4, accumulation_steps=1, train_loss=0.5, start_loss=2.25)
    assert content_update(update_content(update)).start_loss == 2.25
    unreported = Update(1, 2, {"w": torch.tensor([1.0])}, 4, 4, 1, 4, 1, 0.5)
    assert content_update(update_content(unreported)).start_loss is None
