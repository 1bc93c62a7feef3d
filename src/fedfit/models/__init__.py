"""Width-scalable model zoo."""

from fedfit.models.zoo import CNN, MLP, MODELS, LogisticRegression, ModelSpec, build_model, scaled

__all__ = ["CNN", "MLP", "MODELS", "LogisticRegression", "ModelSpec", "build_model", "scaled"]
