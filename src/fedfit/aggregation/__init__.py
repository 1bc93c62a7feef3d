"""Aggregation: one masked weighted average, pluggable weights and server steps, validation."""

from fedfit.aggregation.average import Contribution, masked_weighted_average
from fedfit.aggregation.fednova import LocalSolver, effective_steps, normalised_params, normalising_length
from fedfit.aggregation.participation import MeanInterval, ParticipationFn, mean_interval, unweighted
from fedfit.aggregation.rule import AggregationRule, Arrival, Arrivals, aggregate, aggregate_columns
from fedfit.aggregation.server import server_scale, server_step
from fedfit.aggregation.staleness import StalenessDiscount, StalenessFn
from fedfit.aggregation.validate import validate_masks, validate_params
from fedfit.aggregation.weighting import WEIGHTINGS, LossWeighted, Weighting, weighting

__all__ = [
    "WEIGHTINGS", "AggregationRule", "Arrival", "Arrivals", "Contribution", "LocalSolver", "LossWeighted", "MeanInterval",
    "ParticipationFn", "StalenessDiscount", "StalenessFn", "Weighting", "aggregate", "aggregate_columns", "effective_steps",
    "masked_weighted_average", "mean_interval", "normalised_params", "normalising_length", "server_scale",
    "server_step", "unweighted", "validate_masks", "validate_params", "weighting",
]
