"""Width-scalable model zoo and coordinate maps (slice / scatter of sub-models)."""

from fedfit.models.coordinates import AxisRef, CoordinateMap, WidthGroup, layer_inputs, layer_outputs, width_groups
from fedfit.models.layers import Scaler, scaled
from fedfit.models.small import CNN, MLP, LogisticRegression
from fedfit.models.zoo import MODELS, ModelSpec, build_model

__all__ = ["CNN", "MLP", "MODELS", "AxisRef", "CoordinateMap", "LogisticRegression", "ModelSpec", "Scaler",
           "WidthGroup", "build_model", "layer_inputs", "layer_outputs", "scaled", "width_groups"]
