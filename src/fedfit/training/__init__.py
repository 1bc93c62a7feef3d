"""Local training: the trainer and its techniques."""

from fedfit.training.trainer import OptimizerConfig, evaluate, task_generator, train

__all__ = ["OptimizerConfig", "evaluate", "task_generator", "train"]
