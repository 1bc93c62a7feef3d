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

Only exact instances of the zoo's classes, with no hooks on any module or parameter, take this
path; anything else (techniques, local DP, custom models) keeps autograd.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn
from torch.nn import functional as F

from fedfit.models import MLP, LogisticRegression
from fedfit.training.program import MicroStep

#: ``nll_loss``'s reduction code for ``sum`` and its default ``ignore_index``.
_SUM, _IGNORE = 2, -100


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


def fused_step(model: nn.Module) -> MicroStep | None:
    """The plain micro-step of ``model`` without autograd, or ``None`` when it has no fused one."""
    found = _layers(model)
    if found is None or _hooked(model) or not model.training:
        return None
    layers, rate = found
    # each layer's parameters, looked up once per task rather than through ``Module.__getattr__``
    # twice a layer each way every step (the same tensors: loading a state and stepping write them in place)
    params = [(layer.weight, layer.bias) for layer in layers]
    seeds: dict[tuple[int, torch.dtype], torch.Tensor] = {}  # the loss's gradient seed per n: 1 / n, never written to

    def step(xs: torch.Tensor, ys: torch.Tensor, n: int) -> torch.Tensor:
        with torch.no_grad():
            inputs, relus = _forward(params, rate, xs.flatten(1))
            logp = torch.log_softmax(relus.pop(), 1)
            total, weight = torch.ops.aten.nll_loss_forward(logp, ys, None, _SUM, _IGNORE)
            loss = total / n
            del total
            seed = seeds.get((n, loss.dtype))
            if seed is None:
                seed = seeds[n, loss.dtype] = torch.ones_like(loss) / n
            grad = torch.ops.aten.nll_loss_backward(seed, logp, ys, None, _SUM, _IGNORE, weight)
            held = [torch.ops.aten._log_softmax_backward_data(grad, logp, 1, logp.dtype)]
            del logp, weight, grad  # freed where autograd frees them: only ``held`` keeps the logits' gradient
            _backward(params, rate, inputs, relus, held)
        return loss

    return step


#: Each linear layer's (weight, bias).
Linears = Sequence[tuple[torch.Tensor, torch.Tensor]]


def _forward(layers: Linears, rate: float, x: torch.Tensor) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Each layer's input, and each hidden layer's ReLU output then the logits (last)."""
    inputs, outputs = [], []
    last = len(layers) - 1
    for i, (weight, bias) in enumerate(layers):
        inputs.append(x)
        x = F.linear(x, weight, bias)
        if i < last:
            x = torch.relu(x / rate if rate != 1.0 else x)
        outputs.append(x)
    return inputs, outputs


def _backward(layers: Linears, rate: float, inputs: list[torch.Tensor], relus: list[torch.Tensor],
              held: list[torch.Tensor]) -> None:
    """Accumulate every layer's weight and bias gradient, last layer first, as the engine does,
    from the logits' gradient (``held``, taken out so that no caller keeps it alive): each layer's
    input and ReLU output are dropped once used, as the engine releases saved tensors."""
    grad = held.pop()
    for i in range(len(layers) - 1, -1, -1):
        (weight, bias), x = layers[i], inputs.pop()
        _accumulate(weight, grad.t().mm(x))
        _accumulate(bias, grad.sum(0))
        if i == 0:
            return
        grad = torch.ops.aten.threshold_backward(grad.mm(weight), relus.pop(), 0)
        del x
        if rate != 1.0:
            grad = grad / rate


def _accumulate(param: torch.Tensor, grad: torch.Tensor) -> None:
    if param.grad is None:
        param.grad = grad
    else:
        param.grad += grad
