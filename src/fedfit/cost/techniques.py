"""Memory, FLOPs and payload of a plan's memory-saving techniques (pure arithmetic).

All terms come from the measured per-stage costs (:class:`~fedfit.cost.stages.StageCost`);
``P_i`` parameter bytes, ``A_i`` saved activation bytes per sample (each storage charged once), ``I_i`` / ``O_i`` input /
output bytes per sample, ``F_i`` / ``G_i`` forward / backward FLOPs per sample of stage i,
``B`` the micro-batch, ``g`` gradient copies and ``s`` optimiser slots per trainable parameter:

- plain: ``P + P(g+s) + B (ΣA + T)`` (+ fixed step bytes + workspace, as :class:`MemoryModel`;
  ``T`` the measured step's per-sample bytes beyond the saved activations — backward's
  gradient buffers — charged (when positive) to every plan whose backward reaches the first
  stage without recomputation: plain, QAT, importance, partial, pruning). Every plan's peak is the
  larger of that and its optimiser step's: the plan's state at ``B = 0`` plus the step's
  temporaries (:meth:`MemoryModel.step_bytes`).
- selective (train set T, first trained stage f): gradients and optimiser state only for T;
  no activations before f: ``P + P_T(g+s) + B·max(T_<f, S_f + Σ_{i>f} A_i)`` (``S_f``: what
  stage f saves run alone; ``T_<f``: the largest gradient-free forward transient of a frozen
  stage, its input plus the tensor allocator's peak growth while it runs); no backward before f.
- checkpointing (Chen et al. 2016, "Training Deep Nets with Sublinear Memory Cost"): stages
  ≥ f except the last keep only their inputs and are recomputed one at a time in backward, so
  activations peak at ``B · max(ΣI + I_{n-1} + R_{n-1}, max_i(Σ_{j≤i} I_j + R_i))`` over the
  backward phases, ``R_i`` stage i's own training-step peak beyond its input, measured with the
  tensor allocator as its recomputation holds it (its saved activations and its backward's
  gradient buffers: on an inverted residual block the gradients of the 6×-expanded activations
  add half again to what it saves; the output's gradient is alive through the recomputed
  forward, which on a residual block peaks above its backward), at least what it saves, and
  never more per sample than the measured plain step; the whole model's ``T`` is not charged on
  top; FLOPs ``+ Σ_{f≤i<n-1} F_i``.
- QAT: a fake-quantised copy of every weight lives until its stage's backward; backward at
  stage j holds the gradients of stages ≥ j only and, per sample, the quantised stage outputs saved beside the originals
  before j and stage j's own measured step (under checkpointing ``+P`` whole); the forward
  that makes them holds, at stage i, the copies so far, two more temporaries of its largest
  weight's size, the activations saved before it and its input; ~6 FLOPs per weight per step
  and per activation element per sample.
- importance: the probe holds every gradient, then ``|grad|`` of each tensor in turn.
- partial (keep fraction k): dense weights and a 1-byte mask stay; values, gradients and
  optimiser state are held for the ``kN`` active elements only, plus the gathering of one
  dense gradient at a time (it, the int64 index of its kept elements, the gathered values);
  at the end the trained state is copied out beside them.
- pruning (sparsity σ): fedfit's trainer keeps the pruned weights dense and trains the
  ``(1-σ)N`` survivors like partial training; before that it builds the pruned state tensor by
  tensor (the tensors made so far, and a zero tensor and the result for the one being made).
- progressive (stage k): stages ≤ k resident, stage k and an auxiliary head ``H_k`` trained;
  frozen earlier stages cost their forward transients.
- split (cut c): the device holds stages < c; the edge server computes the rest; activations
  and their gradients (``O_{c-1}`` per sample each way) cross the link.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from fedfit.cost.masked import largest_param_bytes, masked_peak
from fedfit.cost.memory import MemoryModel, step_activation_bytes
from fedfit.cost.profile import ModelCost
from fedfit.cost.stages import BYTES_PER_FLOAT, LARGE_MICRO_BATCH, StageCost, phase_fixed
from fedfit.types import Techniques, TrainPlan


def trained_stages(t: Techniques, stages: Sequence[StageCost]) -> tuple[int, ...]:
    """Stages that get gradients (worst case, by parameter size, for importance selection)."""
    n = len(stages)
    if t.train_stages is not None:
        return tuple(sorted(t.train_stages))
    if t.importance_k is not None:
        by_size = sorted(range(n), key=lambda i: -stages[i].num_params)
        return tuple(sorted(by_size[: t.importance_k]))
    return tuple(range(n))


def first_trained_stage(t: Techniques, stages: Sequence[StageCost]) -> int:
    """First stage whose activations are kept (0 when importance may pick any stage)."""
    return 0 if t.importance_k is not None else min(trained_stages(t, stages), default=len(stages))


def aux_head_params(stages: Sequence[StageCost], k: int) -> int:
    classes = int(stages[-1].output_bytes // BYTES_PER_FLOAT)
    return 0 if k == len(stages) - 1 else int(stages[k].output_bytes // BYTES_PER_FLOAT) * classes + classes


def _frozen_forward(stages: Sequence[StageCost], micro_batch: int) -> float:
    """Peak of running frozen ``stages`` forward (nothing saved, transients only: each stage's
    input and what it allocates, beside the gathered micro-batch the trainer still holds); none
    at micro-batch 0 (the optimiser step's phase)."""
    if micro_batch == 0 or not stages:
        return 0.0
    data = stages[0].input_bytes * micro_batch
    return max(_transient_at(s, micro_batch) + (data if i else 0.0) for i, s in enumerate(stages))


def _transient_at(stage: StageCost, micro_batch: int) -> float:
    """A frozen stage's forward bytes at ``micro_batch``: micro-batch 1's as measured, the line
    through 2 and 10 (its own intercept) up to ``LARGE_MICRO_BATCH``, from there its measurement
    there grown by the slope from 10 to it."""
    if micro_batch == 1:
        return stage.transient_bytes + stage.transient_fixed_bytes
    line = stage.transient_bytes * micro_batch + stage.transient_line_fixed_bytes
    if micro_batch < LARGE_MICRO_BATCH or stage.transient_large_bytes <= 0:
        return line
    at_10 = stage.transient_bytes * 10 + stage.transient_line_fixed_bytes
    slope = (stage.transient_large_bytes - at_10) / (LARGE_MICRO_BATCH - 10)
    return stage.transient_large_bytes + slope * (micro_batch - LARGE_MICRO_BATCH)


def _trained_phases(t: Techniques, cost: ModelCost, f: int) -> list[tuple[float, float]]:
    """(per sample, fixed) bytes of each backward phase of the trained stages. Without
    checkpointing one: their saved activations and the backward's gradient buffers, with the
    plain step's fixed term. Under checkpointing one per stage: the kept inputs and that stage's
    own measured step (gradient buffers included), with the step's own fixed term."""
    stages = cost.stages
    n = len(stages)
    if f >= n:
        return [(0.0, cost.activation_fixed_bytes)]
    if not t.checkpointing or f >= n - 1:
        head = stages[f].isolated_bytes if f > 0 else stages[0].activation_bytes
        per_sample = head + sum(s.activation_bytes for s in stages[f + 1:]) + _backward_buffers(t, cost)
        return [(per_sample, cost.activation_fixed_bytes)]
    kept = [s.input_bytes for s in stages[f:n - 1]]
    tail = stages[-1]  # backward of the (not checkpointed) last stage, beside every kept input
    last = sum(kept) + (tail.input_bytes if tail.saves_input else 0.0) + tail.recompute_bytes
    recompute = [(sum(kept[: j + 1]) + stages[f + j].recompute_bytes, stages[f + j].step_fixed_bytes)
                 for j in range(len(kept))]
    return [(last, tail.step_fixed_bytes), *recompute]


def _activations(t: Techniques, cost: ModelCost, f: int, micro_batch: int) -> float:
    """Activation bytes at the backward's peak beyond the plain step's fixed term (which
    :func:`plan_peak_bytes` adds): the largest phase, never more than the measured plain step
    (dropping or recomputing saved tensors holds no more than it); none at micro-batch 0 (the optimiser step's phase). Negative when checkpointing's
    phases hold less than the plain step's fixed term."""
    if micro_batch == 0:
        return 0.0
    plain = step_activation_bytes(cost, micro_batch)
    phases = _trained_phases(t, cost, f)
    trained = min(max(a * micro_batch + phase_fixed(c, micro_batch) for a, c in phases), plain)
    return trained - cost.activation_fixed_bytes


def _state(memory: MemoryModel) -> int:
    return memory.gradient_copies + memory.optimizer_slots


def _layered_peak(memory: MemoryModel, cost: ModelCost, plan: TrainPlan) -> float:
    """Peak of plain training with selective updating, checkpointing and QAT switched on or off."""
    t, st = plan.techniques, cost.stages
    trained = sum(st[i].param_bytes for i in trained_stages(t, st))
    f = first_trained_stage(t, st)
    peak = cost.param_bytes + trained * _state(memory) + _activations(t, cost, f, plan.micro_batch)
    if f > 0:  # frozen stages run forward first: no gradients yet (but from a second accumulated micro-batch)
        grads = memory.gradient_copies if plan.accumulation_steps > 1 else 0
        frozen = _frozen_forward(st[:f], plan.micro_batch) - cost.activation_fixed_bytes
        peak = max(peak, cost.param_bytes + trained * (memory.optimizer_slots + grads) + frozen)
    if t.qat_bits is not None:
        backward = peak + cost.param_bytes if t.checkpointing else max(peak, _qat_backward(memory, cost, plan, f))
        peak = max(backward, _qat_forward(memory, cost, plan, trained))
    if t.importance_k is not None:  # the probe: every gradient, no optimiser state yet; then |grad| of each
        probe = cost.param_bytes * (1 + memory.gradient_copies)
        peak = max(peak, probe + cost.peak_bytes_per_sample * plan.micro_batch,
                   probe + largest_param_bytes(cost) - cost.activation_fixed_bytes)
    return peak


def _qat_backward(memory: MemoryModel, cost: ModelCost, plan: TrainPlan, f: int) -> float:
    """QAT's backward, stage by stage (j from the last): the weights and optimiser state, the
    gradients of the trained stages ≥ j (those before j are not computed yet: read off the
    allocator's timeline, ResNet-20's peak is in its last block's backward; every trained one
    from a second accumulated micro-batch on), the quantised weight copies of stages f..j (a
    stage's copy is freed once its backward is done), and per sample the activations saved by
    stages f..j−1 together with the fake-quantised outputs the next stage saved in their place
    (a stage output's quantised copy is a tensor of its own beside the original), stage j's
    input and its own measured step (:attr:`StageCost.recompute_bytes`: its saved bytes and
    backward buffers)."""
    st, b = cost.stages, plan.micro_batch
    trained_set = trained_stages(plan.techniques, st)
    trained = sum(st[i].param_bytes for i in trained_set)

    def grads(j: int) -> float:
        done = trained_set if plan.accumulation_steps > 1 else [i for i in trained_set if i >= j]
        return memory.gradient_copies * sum(st[i].param_bytes for i in done)

    phases = [sum(s.param_bytes for s in st[f:j + 1]) + grads(j)
              + b * (sum(s.activation_bytes + s.output_bytes for s in st[f:j]) + st[j].input_bytes
                     + st[j].recompute_bytes) + phase_fixed(st[j].step_fixed_bytes, b)
              for j in range(f, len(st))]
    return (cost.param_bytes + trained * memory.optimizer_slots + max(phases, default=0.0)
            - cost.activation_fixed_bytes)


def _qat_forward(memory: MemoryModel, cost: ModelCost, plan: TrainPlan, trained: float) -> float:
    """QAT's forward: the fake-quantised copies are made stage by stage, each weight's through
    two more weight-sized temporaries (``w/s`` rounded and clamped, ``q − w``: measured with the
    tensor allocator), beside the weights, the optimiser state, the copies made so far and the
    activations saved before that stage plus its input (the largest over the stages); gradients
    exist only from a second accumulated micro-batch on."""
    st, b = cost.stages, plan.micro_batch
    grads = memory.gradient_copies if plan.accumulation_steps > 1 else 0
    resident = cost.param_bytes + trained * (memory.optimizer_slots + grads)
    stage = max(sum(s.param_bytes for s in st[: i + 1]) + 2 * st[i].largest_param * BYTES_PER_FLOAT
                + b * (sum(s.activation_bytes for s in st[:i]) + st[i].input_bytes) for i in range(len(st)))
    return resident + stage - cost.activation_fixed_bytes


def _backward_buffers(t: Techniques, cost: ModelCost) -> float:
    """Per-sample gradient buffers of the backward pass (the measured step's bytes beyond the
    saved activations, when positive) when backward runs down to the first stage, where the
    model's largest activation sits; a plan whose backward stops earlier (selective,
    progressive, split) is charged none, an approximation that understates its peak by at most
    that term. Under checkpointing each recomputed stage's own measured buffers
    (:attr:`StageCost.step_bytes`) are charged instead."""
    return max(0.0, cost.backward_transient_bytes_per_sample) if first_trained_stage(t, cost.stages) == 0 else 0.0


def _progressive_peak(memory: MemoryModel, cost: ModelCost, plan: TrainPlan) -> float:
    k, st = plan.techniques.progressive_stage or 0, cost.stages
    head = aux_head_params(st, k) * BYTES_PER_FLOAT
    resident = sum(s.param_bytes for s in st[: k + 1]) + head
    trained = st[k].param_bytes + head
    own = (st[k].isolated_bytes + (st[k].output_bytes if head else 0.0)) * plan.micro_batch
    return resident + trained * _state(memory) + max(_frozen_forward(st[:k], plan.micro_batch), own)


def _split_peak(memory: MemoryModel, cost: ModelCost, plan: TrainPlan) -> float:
    c, st = plan.techniques.split_cut or 1, cost.stages
    held = sum(s.param_bytes for s in st[:c])
    per_sample = sum(s.activation_bytes for s in st[:c]) + 2 * st[c - 1].output_bytes
    return held * (1 + _state(memory)) + per_sample * plan.micro_batch


def plan_peak_bytes(memory: MemoryModel, cost: ModelCost, plan: TrainPlan) -> int:
    """Predicted peak training memory of ``plan`` (equal to ``memory.peak_bytes`` when plain):
    the larger of backward's peak and the optimiser step's (resident state + its temporaries)."""
    t = plan.techniques
    if not t.active or not cost.stages:
        return memory.peak_bytes(cost, plan.micro_batch)
    body = _body(t)
    backward = body(memory, cost, plan) + cost.activation_fixed_bytes
    step = body(memory, cost, dataclasses.replace(plan, micro_batch=0)) + memory.step_bytes(cost)
    return int(max(backward, step) + memory.workspace_bytes)


def max_plan_micro_batch(memory: MemoryModel, cost: ModelCost, techniques: Techniques, free_bytes: int,
                         cap: int = 4096) -> int:
    """Largest micro-batch whose peak under ``techniques`` fits ``free_bytes`` (0: not even one).

    The peak grows with the micro-batch, so a bisection over ``1..cap`` finds it; a technique
    that lowers the per-sample or fixed bytes lets it grow (what dynamic batching affords).
    """
    if not techniques.active or not cost.stages:
        return memory.max_micro_batch(cost, free_bytes, cap)

    def fits(micro: int) -> bool:
        return plan_peak_bytes(memory, cost, TrainPlan(0, 0, micro, techniques=techniques)) <= free_bytes

    if not fits(1):
        return 0
    lo, hi = 1, cap
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    return lo


def _body(t: Techniques) -> Callable[[MemoryModel, ModelCost, TrainPlan], float]:
    """The peak formula of the technique that redefines what the device holds (or the layered one)."""
    if t.keep_fraction is not None or t.sparsity is not None:
        return masked_peak
    if t.progressive_stage is not None:
        return _progressive_peak
    if t.split_cut is not None:
        return _split_peak
    return _layered_peak


