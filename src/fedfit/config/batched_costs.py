"""``simulation.batched_costs``: the batched executor's cost-model constants, for another machine.

Each key overrides one constant of :data:`fedfit.simulation.cohort_cost.MEASURED` (the fit on the
machine fedfit was developed on); a key left out keeps its value. ``bench/batched_training.py --fit``
measures this machine and prints the whole block to paste. The constants live in the config, so a
given config always makes the same per-chunk decisions (never a timing taken during the run), and the
run directory's config records them.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from fedfit.config.base import Section

Cost = Annotated[float, Field(ge=0.0)] | None


class BatchedCostsConfig(Section):
    """CPU milliseconds, per million multiply-adds (``*_mac``, times the batch) or per million
    parameters (``*_param``), as :class:`fedfit.simulation.cohort_cost.CohortCosts`; ``margin``:
    how much dearer one by one must be predicted before a chunk is vectorised (0.15: 15%)."""

    task: Cost = None
    step: Cost = None
    mac: Cost = None
    probe: Cost = None
    probe_mac: Cost = None
    cohort: Cost = None
    cohort_step: Cost = None
    device_step: Cost = None
    stacked_mac: Cost = None
    stacked_param: Cost = None
    cohort_probe: Cost = None
    device_probe: Cost = None
    stacked_probe_mac: Cost = None
    stacked_probe_param: Cost = None
    margin: Cost = None

    def overrides(self) -> dict[str, float]:
        """The constants the config sets."""
        return {name: value for name, value in self.model_dump().items() if value is not None}
