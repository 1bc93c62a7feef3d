"""What a deployed device masks, and the cohort coordinates both sides agree on.

A cohort's coordinates are the union of its members' sub-model slices in master coordinates
(one width group: that group's slice). Every member masks the vector (w m x, w m) over them
(:func:`fedfit.security.secagg.cohorts.vector`, mixed form): m marks what the device really
holds (its slice, less frozen layers and element masks), so one format serves sub-models,
layer subsets and masks, at twice the words of the update itself.
"""

from __future__ import annotations

import base64

import numpy as np
import torch

from fedfit.aggregation import Contribution
from fedfit.models import ModelSpec
from fedfit.orchestration.submodels import SubModelExchange
from fedfit.security.secagg.cohorts import Coordinates
from fedfit.types import Params, TrainPlan


def floating(template: Params) -> list[str]:
    """The master's floating parameters, in its order (the order of every vector)."""
    return [name for name, t in template.items() if t.is_floating_point()]


def slice_mask(exchange: SubModelExchange, plan: TrainPlan, template: Params) -> Coordinates:
    """The master coordinates ``plan``'s sub-model covers."""
    masks = exchange.map_for(plan).masks(template)
    return {name: masks.get(name, torch.ones_like(template[name], dtype=torch.bool)) for name in floating(template)}


def pack(coords: Coordinates) -> str:
    """``coords`` as base64 of packed bits."""
    flat = np.concatenate([coords[name].flatten().numpy() for name in coords]).astype(np.uint8)
    return base64.b64encode(np.packbits(flat).tobytes()).decode()


def unpack(text: str, template: Params) -> Coordinates:
    """The coordinates of :func:`pack`'s output.

    Raises:
        ValueError: the text does not decode to a mask of the master's size.
    """
    names = floating(template)
    total = sum(template[n].numel() for n in names)
    bits = np.unpackbits(np.frombuffer(base64.b64decode(text, validate=True), dtype=np.uint8))
    if len(bits) < total or bits[total:].any():
        raise ValueError(f"coords: {len(bits)} bits for a master of {total} coordinates")
    out: Coordinates = {}
    offset = 0
    for name in names:
        n = template[name].numel()
        out[name] = torch.from_numpy(bits[offset: offset + n].astype(bool)).reshape(template[name].shape)
        offset += n
    return out


def in_master(exchange: SubModelExchange, plan: TrainPlan, template: Params, sent: Params, update: Params,
              masks: dict[str, torch.Tensor] | None, weight: float) -> tuple[Contribution, Params]:
    """A device's update as a master-coordinate :class:`Contribution`, and the model it was sent there.

    ``template`` gives the master's names and shapes only: coordinates outside the slice are
    zero and marked not held.
    """
    cmap = exchange.map_for(plan)
    zeros = {name: torch.zeros_like(t) for name, t in template.items()}
    held = {name: zeros[name] for name in update}
    full = cmap.scatter(update, held)
    base = cmap.scatter(sent, {name: zeros[name] for name in sent})
    slice_ = slice_mask(exchange, plan, template)
    out_masks: dict[str, torch.Tensor] = {}
    for name in full:
        own = slice_[name]
        if masks is not None and name in masks:
            element = cmap.scatter({name: masks[name].to(template[name].dtype)}, {name: zeros[name]})[name]
            own = own & element.to(torch.bool)
        out_masks[name] = own
    return Contribution(full, weight, out_masks), base


def template_of(spec: ModelSpec) -> Params:
    """Master-shaped parameters of ``spec`` (names, shapes and order only; the global RNG is left as it was)."""
    with torch.random.fork_rng():
        return {k: torch.zeros_like(v.detach()) for k, v in spec.build().state_dict().items()}
