"""Local training: the trainer and its techniques."""

from fedfit.training.optimizers import OptimizerConfig, make_optimizer
from fedfit.training.trainer import evaluate, task_generator, train

__all__ = ["OptimizerConfig", "evaluate", "make_optimizer", "task_generator", "train"]
