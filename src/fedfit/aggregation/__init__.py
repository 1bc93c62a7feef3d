"""Aggregation: one masked weighted average, pluggable weights, update validation."""

from fedfit.aggregation.average import Contribution, masked_weighted_average
from fedfit.aggregation.validate import validate_masks, validate_params
from fedfit.aggregation.weighting import WEIGHTINGS, Weighting, weighting

__all__ = ["WEIGHTINGS", "Contribution", "Weighting", "masked_weighted_average", "validate_masks", "validate_params", "weighting"]
