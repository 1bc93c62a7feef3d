"""Width-scalable model zoo and coordinate maps (slice / scatter of sub-models)."""

from fedfit.models.coordinates import AxisRef, CoordinateMap, WidthGroup, layer_inputs, layer_outputs, width_groups
from fedfit.models.zoo import CNN, MLP, MODELS, LogisticRegression, ModelSpec, Scaler, build_model, scaled

__all__ = ["CNN", "MLP", "MODELS", "AxisRef", "CoordinateMap", "LogisticRegression", "ModelSpec", "Scaler",
           "WidthGroup", "build_model", "layer_inputs", "layer_outputs", "scaled", "width_groups"]
