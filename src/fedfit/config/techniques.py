"""Sections of the techniques fitted to a device: dynamic width and memory-constrained training."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from fedfit.errors import PlanError
from fedfit.config.base import Fraction, PositiveInt, Section


Width = Annotated[float, Field(gt=0.0, le=1.0)]


class WidthConfig(Section):
    """Dynamic width: which sub-model each device trains (seed 003, HeteroFL)."""

    mode: Literal["fixed", "capability", "random", "common"] = "fixed"
    widths: Annotated[tuple[Width, ...], Field(min_length=1)] = (1.0, 0.5, 0.25, 0.125, 0.0625)
    fixed: Width = 1.0
    indices: Literal["prefix", "random", "importance"] = "prefix"
    deadline_s: Annotated[float, Field(gt=0)] | None = None
    elastic: bool = False
    elastic_quantile: Fraction = 0.5
    scaler: bool = False
    calibration_samples: PositiveInt = 2000


TechniqueName = Literal["checkpointing", "selective", "partial", "pruning", "qat", "progressive", "split"]


class SelectiveConfig(Section):
    """Selective layer updating: which stages a device trains."""

    mode: Literal["head", "last_k", "cyclic", "importance"] = "head"
    k: PositiveInt = 1


class PartialConfig(Section):
    """Partial-parameter training: share of elements each device trains."""

    keep_fraction: Annotated[float, Field(gt=0.0, le=1.0)] = 0.5


class PruningConfig(Section):
    """Capability pruning: candidate sparsities (the least that fits wins), or one per tier."""

    sparsities: list[Annotated[float, Field(ge=0.0, lt=1.0)]] = [0.5, 0.7, 0.9]
    by_tier: dict[str, Annotated[float, Field(ge=0.0, lt=1.0)]] = {}

    @model_validator(mode="after")
    def _some(self) -> PruningConfig:
        if not self.sparsities:
            raise ValueError("memory.pruning.sparsities: give at least one sparsity")
        return self


class QatConfig(Section):
    """Quantisation-aware training."""

    bits: Annotated[int, Field(ge=2, le=8)] = 8


class ProgressiveConfig(Section):
    """Progressive layer-wise training."""

    rounds_per_stage: PositiveInt = 2


class SplitConfig(Section):
    """Split learning with an edge server."""

    cut: PositiveInt | None = None
    edge_flops_per_s: Annotated[float, Field(gt=0)] = 1e11


class MemoryConfig(Section):
    """Memory: the memory model's fixed runtime workspace (allocator slack, kernels' scratch), and
    memory-constrained training — which techniques, for which devices."""

    workspace_bytes: Annotated[int, Field(ge=0)] = 256 * 1024
    mode: Literal["off", "all", "auto"] = "off"
    techniques: list[TechniqueName] = Field(default=[], validate_default=True)
    candidates: list[TechniqueName] = ["checkpointing", "selective", "partial", "pruning", "progressive", "split"]
    selective: SelectiveConfig = SelectiveConfig()
    partial: PartialConfig = PartialConfig()
    pruning: PruningConfig = PruningConfig()
    qat: QatConfig = QatConfig()
    progressive: ProgressiveConfig = ProgressiveConfig()
    split: SplitConfig = SplitConfig()

    @field_validator("techniques")
    @classmethod
    def _combinable(cls, techniques: list[str], info: ValidationInfo) -> list[str]:
        from fedfit.training.techniques import check_combination  # torch-heavy: only when used

        if info.data.get("mode") == "all" and not techniques:
            raise ValueError("mode 'all' needs at least one technique")
        try:
            check_combination(tuple(dict.fromkeys(techniques)))
        except PlanError as err:
            raise ValueError(str(err).removeprefix("techniques: ")) from None
        return techniques
