"""The technique memory, FLOP and payload formulas against hand computations."""

import dataclasses

import pytest

from fedfit.cost import MemoryModel, measure, task_cost
from fedfit.cost.profile import ModelCost
from fedfit.cost.stages import StageCost
from fedfit.cost.technique_work import activation_traffic_bytes, plan_flops, plan_payload_bytes
from fedfit.cost.techniques import plan_peak_bytes
from fedfit.models import ModelSpec
from fedfit.types import Techniques, TrainPlan
from tests.helpers import profile, state

# Three stages: params 100/200/10 floats, saved bytes/sample 1000/400/40 (each storage once),
# in/out bytes, FLOPs, and saved bytes when run alone (each saves its input).
STAGES = (
    StageCost("a", 100, 90, 10.0, 10.0, 1000.0, 300.0, 500.0, 1000.0, True),
    StageCost("b", 200, 190, 50.0, 100.0, 400.0, 500.0, 100.0, 900.0, True),
    StageCost("c", 10, 8, 2.0, 4.0, 40.0, 100.0, 8.0, 140.0, True),
)
COST = ModelCost(num_params=310, param_bytes=1240, train_flops_per_sample=176.0, forward_flops_per_sample=62.0,
                 activation_bytes_per_sample=1440.0, activation_fixed_bytes=0.0, stages=STAGES)
MEM = MemoryModel(optimizer_slots=1, workspace_bytes=0)


def _plan(**t) -> TrainPlan:
    return TrainPlan(0, 0, micro_batch=10, techniques=Techniques(**t))


def test_plain_plan_is_the_core_memory_model() -> None:
    assert plan_peak_bytes(MEM, COST, _plan()) == 1240 + 1240 * 2 + 14400


def test_checkpointing_keeps_inputs_plus_the_largest_recomputed_stage() -> None:
    # backward phases: c: inputs 300+500 + c alone 140 = 940; b recomputed: 300+500 + (900-500) = 1200;
    # a recomputed: 300 + (1000-300) = 1000 → peak 1200 per sample × 10
    assert plan_peak_bytes(MEM, COST, _plan(checkpointing=True)) == 1240 + 2480 + 1200 * 10
    device, _ = plan_flops(COST, _plan(checkpointing=True), samples=4, steps=1)
    assert device == (176.0 + 10.0 + 50.0) * 4  # one more forward of a and b


def test_checkpointing_charges_each_recomputed_stages_own_step_peak_not_the_whole_models_buffers() -> None:
    # stage step peaks beyond their input (saved bytes + backward's gradient buffers): a 1500
    # (saves 700), b 700 (saves 400), c 60 (saves 40). Backward phases: c: kept inputs 300+500
    # + c's input 100 + 60 = 960; b recomputed: 300+500 + 700 = 1500; a: 300 + 1500 = 1800.
    # The whole model's 50 B of buffers are not added; recomputing never holds more than the
    # measured plain step (1440 + 50 = 1490), which caps it; with 500 B of buffers it does not.
    steps = (1500.0, 700.0, 60.0)
    stages = tuple(dataclasses.replace(s, step_bytes=b) for s, b in zip(STAGES, steps, strict=True))
    cost = dataclasses.replace(COST, stages=stages, backward_transient_bytes_per_sample=50.0)
    assert plan_peak_bytes(MEM, cost, _plan(checkpointing=True)) == 1240 + 2480 + 1490 * 10
    roomy = dataclasses.replace(cost, backward_transient_bytes_per_sample=500.0)  # plain: 1940 per sample
    assert plan_peak_bytes(MEM, roomy, _plan(checkpointing=True)) == 1240 + 2480 + 1800 * 10


def test_checkpointed_phases_carry_their_own_fixed_bytes_in_place_of_the_plain_steps() -> None:
    # as above with 500 B of buffers, a's step has 5000 B of fixed bytes and the plain step 10000:
    # B = 10: a: 1800·10 + 5000 = 23000 > b: 15000, under the plain 1940·10 + 10000 = 29400;
    # B = 1: a: 1800 + 5000 = 6800, the plain step's 11940 does not apply.
    stages = (dataclasses.replace(STAGES[0], step_bytes=1500.0, step_fixed_bytes=5000.0),
              dataclasses.replace(STAGES[1], step_bytes=700.0), dataclasses.replace(STAGES[2], step_bytes=60.0))
    cost = dataclasses.replace(COST, stages=stages, backward_transient_bytes_per_sample=500.0,
                               activation_fixed_bytes=10000.0)
    assert plan_peak_bytes(MEM, cost, _plan(checkpointing=True)) == 1240 + 2480 + 23000
    one = TrainPlan(0, 0, micro_batch=1, techniques=Techniques(checkpointing=True))
    assert plan_peak_bytes(MEM, cost, one) == 1240 + 2480 + 6800


def test_selective_head_drops_early_activations_state_and_backward() -> None:
    plan = _plan(train_stages=(2,))
    # backward: weights + c's gradient and momentum + c's own saved bytes 1240 + 40·2 + 140·10 = 2720;
    # the frozen forward (no gradients yet) holds the gathered batch (a's input, 300 B a sample)
    # beside b's transient (0 here): 1240 + 40 + 300·10 = 4280
    assert plan_peak_bytes(MEM, COST, plan) == 4280
    roomy = dataclasses.replace(COST, stages=tuple(dataclasses.replace(s, input_bytes=0.0) for s in STAGES))
    assert plan_peak_bytes(MEM, roomy, plan) == 1240 + 40 * 2 + 140 * 10
    assert plan_flops(COST, plan, samples=1, steps=1)[0] == 62.0 + 4.0
    assert plan_payload_bytes(COST, plan, 1240) == (1240, 40)


def test_partial_holds_state_for_the_active_fraction_only() -> None:
    # dense weights 1240 + mask 310 B + active 0.5·1240 × (values, grad, momentum) + one stage's
    # dense gradients (b's 200·4, computed together) gathered beside the saved activations
    assert plan_peak_bytes(MEM, COST, _plan(keep_fraction=0.5)) == 1240 + 310 + 620 * 3 + 800 + 14400
    assert plan_payload_bytes(COST, _plan(keep_fraction=0.5), 1240) == (1240, 4 * 155)


def test_pruning_keeps_the_pruned_weights_dense_and_trains_the_survivors() -> None:
    # fedfit's trainer: dense weights 1240 + mask 310 B, survivors 0.1·1240 × (values, grad,
    # momentum), b's dense gradients 200·4 gathered beside the saved activations
    assert plan_peak_bytes(MEM, COST, _plan(sparsity=0.9)) == 1240 + 310 + 124 * 3 + 800 + 14400
    assert plan_payload_bytes(COST, _plan(sparsity=0.9), 1240) == ((310 + 7) // 8 + 31 * 4,) * 2


def test_pruning_peaks_where_the_trainer_builds_the_pruned_state_when_activations_are_small() -> None:
    # no activations: start = weights 1240 + mask 310 + the pruned copy 1240 + a zero tensor of
    # the largest weight 760 = 3550 > end 1550 + 124·2 + 1240 > backward 1240 + 310 + 124·3 + 800
    idle = dataclasses.replace(COST, activation_bytes_per_sample=0.0)
    assert plan_peak_bytes(MEM, idle, _plan(sparsity=0.9)) == 3550
    # tensor by tensor (elements, in order): 190 first: a zero tensor and the result 2·760 = 1520
    # beside nothing made yet, less than the whole pruned state 1240 → start 1550 + 1520 = 3070
    first = dataclasses.replace(idle, param_tensors=((190, 2), (90, 4), (10, 1), (10, 1), (8, 2), (2, 1)))
    assert plan_peak_bytes(MEM, first, _plan(sparsity=0.9)) == 3070


def test_partial_peaks_at_the_end_copy_when_little_is_kept() -> None:
    # keep 0.1, no activations: end = 1550 + 124 × (values, momentum) + the copied state 1240 = 3038
    # > backward 1550 + 124·3 + 800 = 2722
    idle = dataclasses.replace(COST, activation_bytes_per_sample=0.0)
    assert plan_peak_bytes(MEM, idle, _plan(keep_fraction=0.1)) == 3038


def test_partial_gathers_each_dense_gradient_with_the_index_of_its_kept_elements() -> None:
    # tensors (elements, dims), split by the stages' parameter counts: the gather of stage b holds
    # its dense gradients 200·4 and the int64 index of its largest tensor's kept elements
    # 0.5·190·2·8 = 1520, beside the activations saved by a and b (1000 + 400)·10, those of c
    # being freed: 16320 (a's: 400 + 0.5·90·4·8 + 10000 = 11840; c's: 40 + 64 + 14400 = 14504);
    # with 500 B/sample of backward buffers, b's own backward before its gather is the larger:
    # its dense gradients 800 beside a's activations 1000, its input 500 and its step 900 − 500,
    # per sample (1900 ≤ the plain step's 1940): 800 + 19000
    tensors = ((90, 4), (10, 1), (190, 2), (10, 1), (8, 2), (2, 1))
    cost = dataclasses.replace(COST, param_tensors=tensors)
    assert plan_peak_bytes(MEM, cost, _plan(keep_fraction=0.5)) == 1550 + 620 * 3 + 800 + 1520 + 14000
    buffers = dataclasses.replace(cost, backward_transient_bytes_per_sample=500.0)
    assert plan_peak_bytes(MEM, buffers, _plan(keep_fraction=0.5)) == 1550 + 620 * 3 + 800 + 1900 * 10


def test_qat_forward_holds_the_quantised_copies_and_two_temporaries_of_the_largest_weight() -> None:
    # b's largest weight 2000 floats (8000 B). Forward, per stage (copies so far + 2 × its largest
    # weight + B × (saved before it + its input)): a: 400 + 2·360 + 10·300 = 4120;
    # b: 1200 + 2·8000 + 10·(1000 + 500) = 32200; c: 1240 + 2·32 + 10·(1400 + 100) = 16304
    # → weights 1240 + momentum 1240 + 32200 = 34680, above backward (1240 + 2480 + 25200, below)
    big = dataclasses.replace(COST, stages=(STAGES[0], dataclasses.replace(STAGES[1], largest_param=2000),
                                            STAGES[2]))
    assert plan_peak_bytes(MEM, big, _plan(qat_bits=8)) == 34680
    sgd = MemoryModel(workspace_bytes=0)
    assert plan_peak_bytes(sgd, big, _plan(qat_bits=8)) == 1240 + 32200


def test_qat_backward_charges_each_stages_copy_until_its_backward_and_the_quantised_outputs() -> None:
    # steps beyond the input (saved bytes less the input): a 700, b 400, c 40. Phases (copies,
    # gradients of the stages from j on, activations): a: 400 + 1240 + 10·(300 + 700) = 11640;
    # b: 1200 + 840 + 10·(1000 + 500 + 500 + 400) = 26040; c: 1240 + 40 + 10·(1400 + 600 + 100 +
    # 40) = 22680 → 1240 + 1240 momentum + 26040 (> forward 20200)
    assert plan_peak_bytes(MEM, COST, _plan(qat_bits=8)) == 1240 + 1240 + 26040
    sgd = MemoryModel(workspace_bytes=0)
    assert plan_peak_bytes(sgd, COST, _plan(qat_bits=8)) == 1240 + 26040
    # from a second accumulated micro-batch on every gradient exists: b: 1200 + 1240 + 24000
    accumulated = dataclasses.replace(_plan(qat_bits=8), accumulation_steps=2)
    assert plan_peak_bytes(sgd, COST, accumulated) == 1240 + 26440


def test_importance_probe_holds_every_gradient_and_one_absolute_value() -> None:
    # no activations: training the largest stage b 1240 + 800 × (grad, momentum) = 2840; the probe
    # 1240 + 1240 gradients + |grad| of the largest weight 760 = 3240
    idle = dataclasses.replace(COST, activation_bytes_per_sample=0.0)
    assert plan_peak_bytes(MEM, idle, _plan(importance_k=1)) == 3240


def test_a_recomputed_stages_fixed_bytes_apply_as_measured_at_micro_batch_1_and_from_0_on_after() -> None:
    # a's step: 3000 B/sample, and 1000 B less than that at micro-batch 1 (measured: the 1-D CNN's
    # first convolution); plain step 6440 B/sample caps nothing. B = 1: a: 300 + 3000 − 1000 = 2300
    # > b 300+500+700; B = 10: a: 3300·10, its negative fixed part no longer applies.
    stages = (dataclasses.replace(STAGES[0], step_bytes=3000.0, step_fixed_bytes=-1000.0),
              dataclasses.replace(STAGES[1], step_bytes=700.0), dataclasses.replace(STAGES[2], step_bytes=60.0))
    cost = dataclasses.replace(COST, stages=stages, backward_transient_bytes_per_sample=5000.0)
    one = TrainPlan(0, 0, micro_batch=1, techniques=Techniques(checkpointing=True))
    assert plan_peak_bytes(MEM, cost, one) == 1240 + 2480 + 2300
    assert plan_peak_bytes(MEM, cost, _plan(checkpointing=True)) == 1240 + 2480 + 33000


def test_progressive_stage_zero_has_an_auxiliary_head() -> None:
    head = (500 // 4) * 2 + 2  # out features × classes (8 bytes → 2 classes) + bias
    expected = 400 + head * 4 + (400 + head * 4) * 2 + (1000 + 500) * 10
    assert plan_peak_bytes(MEM, COST, _plan(progressive_stage=0)) == expected
    assert plan_payload_bytes(COST, _plan(progressive_stage=0), 1240) == (400, 400)


def test_split_charges_the_edge_and_the_activation_traffic() -> None:
    plan = _plan(split_cut=1, edge_flops_per_s=1e9)
    assert plan_peak_bytes(MEM, COST, plan) == 400 * 3 + (1000 + 2 * 500) * 10
    assert plan_flops(COST, plan, samples=3, steps=1) == (20.0 * 3, 156.0 * 3)
    assert activation_traffic_bytes(COST, plan, samples=3) == 1500


@pytest.mark.parametrize("name", ["cnn", "mlp"])
def test_measured_stages_add_up_to_the_whole_model(name: str) -> None:
    cost = measure(ModelSpec(name, (1, 28, 28), 10))
    assert sum(s.num_params for s in cost.stages) == cost.num_params
    assert sum(s.activation_bytes for s in cost.stages) == pytest.approx(cost.activation_bytes_per_sample)
    assert sum(s.forward_flops + s.backward_flops for s in cost.stages) == pytest.approx(cost.train_flops_per_sample)
    plain = plan_peak_bytes(MemoryModel(), cost, TrainPlan(0, 0, 64))
    ckpt = plan_peak_bytes(MemoryModel(), cost, TrainPlan(0, 0, 64, techniques=Techniques(checkpointing=True)))
    assert ckpt <= plain


def test_frozen_stages_cost_their_forward_transient() -> None:
    stages = (dataclasses.replace(STAGES[0], transient_bytes=5000.0), *STAGES[1:])
    cost = dataclasses.replace(COST, stages=stages)
    # weights + c's momentum (no gradient during the forward) + a's transient 5000·10 (> b's 0 +
    # the gathered batch 300·10)
    assert plan_peak_bytes(MEM, cost, _plan(train_stages=(2,))) == 1240 + 40 + 5000 * 10
    fixed = dataclasses.replace(cost, stages=(dataclasses.replace(stages[0], transient_fixed_bytes=-4000.0),
                                              *STAGES[1:]))
    one = TrainPlan(0, 0, micro_batch=1, techniques=Techniques(train_stages=(2,)))
    assert plan_peak_bytes(MEM, fixed, one) == 1240 + 40 + 1000  # micro-batch 1: 5000 − 4000 as measured


def test_frozen_forward_fixed_part_is_the_lines_intercept_from_micro_batch_2_on() -> None:
    # a residual block's forward holds a workspace at micro-batch 1 only (fixed 9000 there); from 2
    # on the line through 2 and 10 holds, with its own intercept (700), not micro-batch 1's excess
    stage = dataclasses.replace(STAGES[0], transient_bytes=5000.0, transient_fixed_bytes=9000.0,
                                transient_line_fixed_bytes=700.0)
    cost = dataclasses.replace(COST, stages=(stage, *STAGES[1:]))
    one = TrainPlan(0, 0, micro_batch=1, techniques=Techniques(train_stages=(2,)))
    assert plan_peak_bytes(MEM, cost, one) == 1240 + 40 + 5000 + 9000
    assert plan_peak_bytes(MEM, cost, _plan(train_stages=(2,))) == 1240 + 40 + 5000 * 10 + 700


def test_frozen_forward_from_the_large_micro_batch_on_grows_from_its_measurement_there() -> None:
    # measured 404700 B at 128, 50700 at 10 (5000 · 10 + 700): below 128 the line through 2 and
    # 10, from 128 on the measurement there plus (404700 − 50700) / 118 = 3000 B a sample
    stage = dataclasses.replace(STAGES[0], transient_bytes=5000.0, transient_line_fixed_bytes=700.0,
                                transient_large_bytes=404700.0)
    cost = dataclasses.replace(COST, stages=(stage, *STAGES[1:]))

    def at(micro_batch: int) -> float:
        return plan_peak_bytes(MEM, cost, TrainPlan(0, 0, micro_batch, techniques=Techniques(train_stages=(2,))))

    assert at(127) == 1240 + 40 + 5000 * 127 + 700
    assert at(128) == 1240 + 40 + 404700
    assert at(130) == 1240 + 40 + 404700 + 2 * 3000


def test_task_cost_times_the_edge_server_and_the_activation_traffic() -> None:
    plan = TrainPlan(0, 0, micro_batch=10, techniques=Techniques(split_cut=1, edge_flops_per_s=1e3))
    cost = task_cost(plan=plan, profile=profile(), state=state(bandwidth_bps=8e3), cost=COST, memory=MEM,
                     num_examples=20, bytes_down=400, bytes_up=400)
    assert cost.edge_compute_s == pytest.approx(156.0 * 20 / 1e3)
    assert cost.bytes_up == cost.bytes_down == 400 + 500 * 20
    assert cost.upload_s == pytest.approx(0.05 + (400 + 10000) * 8 / 8e3)
    assert cost.duration_s == pytest.approx(cost.download_s + cost.compute_s + cost.upload_s + cost.edge_compute_s)


def test_backward_buffers_are_charged_when_backward_reaches_the_first_stage() -> None:
    # plain: + 50·10. Partial and pruning hold a stage's dense gradients (b's 800) inside its own
    # backward, before they are gathered: beside a's activations, b's input and b's step, 1900 B a
    # sample, never more than the plain step's peak (1440 without buffers: 800 + 14400 = 15200;
    # 1490 with 50 B of buffers: + 500; 1940 with 500 B: 1900, 800 + 19000)
    with_buffers = dataclasses.replace(COST, backward_transient_bytes_per_sample=50.0)
    assert plan_peak_bytes(MEM, with_buffers, _plan()) == plan_peak_bytes(MEM, COST, _plan()) + 50 * 10
    roomy = dataclasses.replace(COST, backward_transient_bytes_per_sample=500.0)
    for techniques in ({"keep_fraction": 0.5}, {"sparsity": 0.9}):
        assert plan_peak_bytes(MEM, with_buffers, _plan(**techniques)) == plan_peak_bytes(MEM, COST, _plan(**techniques)) + 500
        assert plan_peak_bytes(MEM, roomy, _plan(**techniques)) == plan_peak_bytes(MEM, COST, _plan(**techniques)) \
            - 800 - 14400 + 800 + 19000
    head_only = _plan(train_stages=(2,))
    assert plan_peak_bytes(MEM, with_buffers, head_only) == plan_peak_bytes(MEM, COST, head_only)
