"""The fused plain-SGD trainer step as one TorchScript call: the interpreter lock is released for it.

:func:`fedfit.training.fused._sgd_batch`'s step (every micro-batch's forward and hand-written
backward, then the SGD update) calls some forty ATen operators per micro-batch from Python, and the
Python between two of them holds the interpreter lock. One device training alone only pays for that
Python; two training threads (``simulation.executor: threads``, the default ``auto`` on two or more
cores) wait for each other's Python at every operator and hand the lock back and forth, so two
threads gained ≈ 1.25× over one where two processes gained ≈ 1.4–1.5× (bench/RESULTS.md, *flw15k*).
Here the same step is a TorchScript function: the call releases the lock once and the interpreter
runs the same ATen operators, with the same arguments in the same order, so the gradients, the loss
and the weights are bit-identical to the Python step's (``tests/training/test_fused.py`` holds it to
autograd and PyTorch's SGD bit for bit). The graph executor's optimisations are switched off around
the call (a per-thread flag, restored after): no pass may rewrite an operator (decompose ``linear``,
fold constants) into one that rounds differently.

It is compiled on first use (≈ 0.05 s once per process), not at import. TorchScript is deprecated
from torch 2.13 on (it still ships); the warning is silenced. Where a torch cannot script it, the
step runs from Python as before (:func:`fedfit.training.fused._sgd_batch`), with the same results.
"""

from __future__ import annotations

import functools
import threading
import warnings
from typing import Any

import torch
from torch.nn import functional as F

def forward_layers(params: list[torch.Tensor], rate: float, x: torch.Tensor) -> list[torch.Tensor]:
    """Each layer's input (a hidden layer's: its ReLU output, made in place), then the logits
    (TorchScript source, also called from Python by :func:`fedfit.training.fused._micro`)."""
    inputs: list[torch.Tensor] = []
    last = len(params) - 2
    for i in range(0, last + 2, 2):
        inputs.append(x)
        x = F.linear(x, params[i], params[i + 1])
        if i < last:
            if rate != 1.0:
                x.div_(rate)
            x.relu_()
    inputs.append(x)
    return inputs


def _script_step(params: list[torch.Tensor], rate: float, x: torch.Tensor, y: torch.Tensor, idx: torch.Tensor,
                 micro: int, divisor: torch.Tensor, seed: torch.Tensor, lr: float, weight_decay: float) -> float:
    """:func:`fedfit.training.fused._sgd_batch`'s step, operator for operator (TorchScript source)."""
    n = idx.shape[0]
    parts = [idx] if n <= micro else idx.split(micro)
    grads: list[torch.Tensor] = []
    total = 0.0
    last = len(params) - 2
    for part in parts:
        xs = x.index_select(0, part)
        ys = y.index_select(0, part)
        inputs = forward_layers(params, rate, xs.flatten(1))
        logp = torch.log_softmax(inputs.pop(), 1)
        # nll_loss's reduction 2: sum; ignore_index -100: its default
        summed, weight = torch.ops.aten.nll_loss_forward(logp, ys, None, 2, -100)
        loss = torch.div(summed, divisor)
        grad = torch.ops.aten.nll_loss_backward(seed, logp, ys, None, 2, -100, weight)
        grad = torch.ops.aten._log_softmax_backward_data(grad, logp, 1, logp.dtype)
        first = len(grads) == 0
        if first:
            grads = [grad] * len(params)  # placeholders, each set below (last layer first)
        for i in range(last, -1, -2):
            h = inputs[i // 2]
            gw = grad.t().mm(h)
            gb = grad.sum(0)
            if first:
                grads[i] = gw
                grads[i + 1] = gb
            else:
                grads[i] += gw
                grads[i + 1] += gb
            if i > 0:
                grad = torch.ops.aten.threshold_backward(grad.mm(params[i]), h, 0)
                if rate != 1.0:
                    grad = grad / rate
        total += float(loss) * n
    if weight_decay != 0:
        grads = list(torch._foreach_add(grads, params, alpha=weight_decay))
    torch._foreach_add_(params, grads, alpha=-lr)
    return total


_lock = threading.Lock()


@functools.cache
def _compiled() -> Any | None:
    """The scripted step; ``None`` where this torch cannot script it (a torch without TorchScript):
    the caller then runs the same operators from Python."""
    try:
        with warnings.catch_warnings():  # torch 2.13 deprecates TorchScript (still shipped); see the module's note
            warnings.simplefilter("ignore", DeprecationWarning)
            return torch.jit.script(_script_step)
    except Exception:  # noqa: BLE001 - any failure to script means: no scripted step here
        return None


def scripted_step(params: list[torch.Tensor], rate: float, x: torch.Tensor, y: torch.Tensor, idx: torch.Tensor,
                  micro: int, divisor: torch.Tensor, seed: torch.Tensor, lr: float,
                  weight_decay: float) -> float | None:
    """Run the step in TorchScript's interpreter, its graph unoptimised (the lock is released inside);
    ``None``, having run nothing, where TorchScript is not available."""
    with _lock:  # one compile, whichever training thread comes first
        step = _compiled()
    if step is None:
        return None
    before = torch._C._get_graph_executor_optimize()
    torch._C._set_graph_executor_optimize(False)
    try:
        return float(step(params, rate, x, y, idx, micro, divisor, seed, lr, weight_decay))
    finally:
        torch._C._set_graph_executor_optimize(before)
