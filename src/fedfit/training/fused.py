"""A micro-step without autograd for the zoo's stacks of linear layers, bit-identical to autograd's.

For logistic regression and the MLP (linear → scaler → ReLU, twice, then linear) the trainer's
plain micro-step (:func:`fedfit.training.program.loss_step`: summed cross-entropy over the
effective batch, ``backward()``) is run here by hand: the same ATen operators autograd's
derivative formulas call, in the same layouts and order (``AddmmBackward0``'s ``gᵀ·x`` for the
weight and ``g·W`` for the input, the bias gradient summed over the batch as the engine's
``sum_to`` does, ``threshold_backward`` for ReLU, ``nll_loss_backward`` and
``_log_softmax_backward_data`` for the loss, the scaler's ``/ rate``), without building a graph.
Each parameter's gradient is set (first micro-batch) or added in place (later accumulated ones),
as ``AccumulateGrad`` does. So the gradients, the loss, and every step after are bit-identical
to autograd's (``tests/training/test_fused.py``), at about 15% less CPU per step: the engine's
graph, its saved-variable bookkeeping and its node dispatch are what a small model's step
spends beside its three matrix products.

With plain SGD (:class:`~fedfit.training.optimizers.EagerSGD` without momentum) a whole trainer
step (zero the gradients, every micro-batch of the effective batch, the update) is one call,
:func:`fused_steps`' batch step: the gradients are held in a list rather than set on the
parameters, and the update is ``EagerSGD``'s own ``torch._foreach`` calls on that list, so the
weights are bit-identical to the three calls it replaces, without their per-step Python. That
step runs in TorchScript's interpreter (:mod:`fedfit.training.fused_script`), which releases the
interpreter lock for the whole step, so training threads do not wait for each other's Python.

Only exact instances of the zoo's classes, with no hooks on any module or parameter, take this
path; anything else (techniques, local DP, custom models) keeps autograd.
"""

from __future__ import annotations


import torch
from torch import nn

from fedfit.models import MLP, LogisticRegression
from fedfit.training.fused_script import forward_layers as _forward
from fedfit.training.fused_script import scripted_step
from fedfit.training.optimizers import EagerSGD, plain_sgd_update
from fedfit.training.program import BatchStep, MicroStep

#: ``nll_loss``'s reduction code for ``sum`` and its default ``ignore_index``.
_SUM, _IGNORE = 2, -100

#: Each linear layer's weight and bias, flat (``[w0, b0, w1, b1, ...]``, the model's parameter order).
Linears = list[torch.Tensor]
#: The loss's divisor and gradient seed per (effective batch n, dtype): n and 1 / n, never written to.
Seeds = dict[tuple[int, torch.dtype], tuple[torch.Tensor, torch.Tensor]]


def _hooked(model: nn.Module) -> bool:
    """Whether any module or parameter of ``model`` carries a hook the fused step would skip (or
    a parameter is frozen)."""
    hooks = nn.modules.module
    if hooks._global_forward_hooks or hooks._global_forward_pre_hooks or hooks._global_backward_hooks \
            or hooks._global_backward_pre_hooks:
        return True
    for module in model.modules():
        if module._forward_hooks or module._forward_pre_hooks or module._backward_hooks or module._backward_pre_hooks:
            return True
    return any(p._backward_hooks or getattr(p, "_post_accumulate_grad_hooks", None) or not p.requires_grad
               for p in model.parameters())


def _layers(model: nn.Module) -> tuple[list[nn.Linear], float] | None:
    """The linear layers of a fusable model (ReLU between them) and its scaler's rate."""
    if type(model) is LogisticRegression:
        return [model.linear], 1.0
    if type(model) is MLP:
        return [model.fc1, model.fc2, model.fc3], model.scaler.rate
    return None


def _fusable(model: nn.Module) -> tuple[list[torch.Tensor], float] | None:
    """A fusable model's tensors (:data:`Linears`, looked up once per task rather than through
    ``Module.__getattr__`` every step: loading a state and stepping write them in place) and rate."""
    found = _layers(model)
    if found is None or _hooked(model) or not model.training:
        return None
    return [t for layer in found[0] for t in (layer.weight, layer.bias)], found[1]


def fused_steps(model: nn.Module, opt: torch.optim.Optimizer) -> tuple[MicroStep, BatchStep | None] | None:
    """The plain micro-step of ``model`` without autograd and, when ``opt`` steps as plain SGD over
    exactly its tensors, the whole trainer step; ``None`` when ``model`` has no fused step."""
    found = _fusable(model)
    if found is None:
        return None
    params, rate = found
    return _micro_step(params, rate), _sgd_batch(params, rate, opt) if _plain_sgd(opt, params) else None


def _micro_step(params: Linears, rate: float) -> MicroStep:
    """The micro-step setting (first micro-batch) or adding to each parameter's ``.grad``."""
    seeds: Seeds = {}

    def step(xs: torch.Tensor, ys: torch.Tensor, n: int) -> torch.Tensor:
        grads = [p.grad for p in params]
        with torch.no_grad():
            loss = _micro(params, rate, seeds, xs, ys, n, grads)
        for p, g in zip(params, grads, strict=True):
            if p.grad is not g:
                p.grad = g
        return loss

    return step


def _plain_sgd(opt: torch.optim.Optimizer, params: Linears) -> bool:
    """Whether ``opt`` steps as :meth:`EagerSGD._plain` over exactly ``params``: one group, no
    momentum, no hooks."""
    if type(opt) is not EagerSGD or len(opt.param_groups) != 1:
        return False
    group = opt.param_groups[0]
    same = len(group["params"]) == len(params) and all(a is b for a, b in zip(group["params"], params, strict=True))
    return same and group["momentum"] == 0 and not (group["maximize"] or group["differentiable"] or group["fused"]) \
        and not (opt._optimizer_step_pre_hooks or opt._optimizer_step_post_hooks)


def _sgd_batch(params: Linears, rate: float, opt: torch.optim.Optimizer) -> BatchStep:
    """The whole step: the micro-batches' gradients into a list, then :meth:`EagerSGD._plain`'s
    update from it (weight decay ``g + wd·w``, then ``w − lr·g``, read from the optimiser's group
    at every step), as one TorchScript call that releases the interpreter lock
    (:mod:`fedfit.training.fused_script`: :func:`_micro`'s operators, in its order)."""
    group, flat = opt.param_groups[0], list(params)
    seeds: Seeds = {}

    def batch(x: torch.Tensor, y: torch.Tensor, idx: torch.Tensor, micro: int) -> float:
        n, dtype = idx.shape[0], flat[-1].dtype
        key = (n, dtype)
        divisor, seed = seeds.get(key) or seeds.setdefault(key, (torch.full((), n, dtype=dtype),
                                                                 torch.ones((), dtype=dtype) / n))
        with torch.no_grad():
            done = scripted_step(flat, rate, x, y, idx, micro, divisor, seed, group["lr"], group["weight_decay"])
            if done is not None:
                return done
            total, grads = 0.0, list[torch.Tensor | None]([None] * len(params))  # no TorchScript: from Python
            for part in (idx,) if n <= micro else idx.split(micro):
                total += float(_micro(params, rate, seeds, x.index_select(0, part), y.index_select(0, part), n,
                                      grads)) * n
            plain_sgd_update(flat, [g for g in grads if g is not None], group)  # every layer has one
            return total

    return batch


def _micro(params: Linears, rate: float, seeds: Seeds, xs: torch.Tensor, ys: torch.Tensor, n: int,
           grads: list[torch.Tensor | None]) -> torch.Tensor:
    """One micro-batch (gradient mode off): returns its summed cross-entropy / ``n`` and sets
    (``None`` slot) or adds in place each tensor's gradient in ``grads``, last layer first."""
    inputs = _forward(params, rate, xs.flatten(1))
    logp = torch.log_softmax(inputs.pop(), 1)
    total, weight = torch.ops.aten.nll_loss_forward(logp, ys, None, _SUM, _IGNORE)
    key = (n, total.dtype)
    divisor, seed = seeds.get(key) or seeds.setdefault(key, (torch.full_like(total, n), torch.ones_like(total) / n))
    loss = torch.div(total, divisor)  # total / n, without wrapping the number n in a tensor every step
    del total
    grad = torch.ops.aten.nll_loss_backward(seed, logp, ys, None, _SUM, _IGNORE, weight)
    held = [torch.ops.aten._log_softmax_backward_data(grad, logp, 1, logp.dtype)]
    del logp, weight, grad  # freed where autograd frees them: only ``held`` keeps the logits' gradient
    _backward(params, rate, inputs, held, grads)
    return loss


def _backward(params: Linears, rate: float, inputs: list[torch.Tensor], held: list[torch.Tensor],
              grads: list[torch.Tensor | None]) -> None:
    """Each layer's weight and bias gradient into ``grads``, last layer first, as the engine does,
    from the logits' gradient (``held``, taken out so that no caller keeps it alive): each layer's
    input is dropped once used, as the engine releases saved tensors."""
    grad = held.pop()
    for i in range(len(params) - 2, -1, -2):
        x = inputs.pop()
        _accumulate(grads, i, grad.t().mm(x))
        _accumulate(grads, i + 1, grad.sum(0))
        if i == 0:
            return
        grad = torch.ops.aten.threshold_backward(grad.mm(params[i]), x, 0)  # x: the ReLU's output
        del x
        if rate != 1.0:
            grad = grad / rate


def _accumulate(grads: list[torch.Tensor | None], i: int, grad: torch.Tensor) -> None:
    held = grads[i]
    if held is None:
        grads[i] = grad
    else:
        held += grad
