"""The bound's mini-batch noise when the data a device holds is a buffer sampled from a stream.

On static data the objective is F = Σ p_i F_i over the data the devices hold, and a batch of b
samples drawn from device i's data is an unbiased estimate of ∇F_i with variance σ²/b
(:mod:`.bound`'s noise term β η σ²/2 · Σ p_i²/b_i). On a stream the objective is the loss on
the stream's distribution, and the D_i samples a buffer holds at dispatch are themselves a
sample of it: every batch of the task is drawn from the *same* D_i samples. A task of τ steps of
b samples walks ⌈D/b⌉-step epochs, each a fresh permutation of the buffer (the trainer's order),
so it draws n = e·D + r samples: e whole passes and r samples of one more (r = min(s·b, D) for
the s steps left over). The mean of those n draws deviates from the stream's mean gradient by
the r-sample remainder's deviation from the buffer mean (sampling without replacement) plus the
buffer mean's own deviation from the stream's, which is shared by every step of the task::

    Var[ḡ_task] = σ² · ( r (D − r) / ((D − 1) n²)  +  1/D )

The bound charges noise per step with independent steps, Var[ḡ_task] = v / τ, so the per-step
variance a task's batches are worth, in units of σ², is::

    v(τ, b, D) = τ · ( r (D − r) / ((D − 1) n²) + 1/D )

For τ·b ≪ D (one pass over part of a large buffer) this is 1/b, the static term; once the task
covers the buffer (τ·b ≥ D) it is τ/D whatever b is: a larger batch re-reads the same samples
and buys no less noise, and more local steps over a buffer repeat its sampling error. So on a
stream the bound stops rewarding batches beyond about D/τ (the heterogeneous fill no longer
grows a fast device into its whole buffer for nothing), and small buffers weigh their noise by
the samples they actually hold.
"""

from __future__ import annotations

import math


def task_draws(tau: int, batch: int, held: int) -> tuple[int, int]:
    """(n, r): samples a task of ``tau`` steps of ``batch`` draws from ``held`` samples, and
    how many of them belong to the last, partial pass over the buffer.

    >>> task_draws(5, 8, 20)  # epochs of 3 steps (8, 8, 4): one pass, then 2 steps of 8
    (36, 16)
    >>> task_draws(50, 64, 64)
    (3200, 0)
    """
    held, batch = max(1, held), max(1, min(batch, max(1, held)))
    per_epoch = math.ceil(held / batch)
    epochs, left = divmod(max(1, tau), per_epoch)
    rest = min(left * batch, held)
    return epochs * held + rest, rest


def stream_noise(tau: int, batch: int, held: int) -> float:
    """v(τ, b, D): the per-step gradient variance, in units of σ², of a task of ``tau`` steps of
    ``batch`` over a buffer of ``held`` samples drawn from the stream (module docstring).

    >>> stream_noise(50, 64, 64), stream_noise(50, 8, 64) > stream_noise(50, 64, 64)
    (0.78125, True)
    >>> round(stream_noise(1, 4, 10_000), 4)  # one small batch from a large buffer: ≈ 1/b
    0.25
    """
    held = max(1, held)
    n, rest = task_draws(tau, batch, held)
    within = rest * (held - rest) / ((held - 1) * n * n) if held > 1 else 0.0
    return max(1, tau) * (within + 1 / held)
