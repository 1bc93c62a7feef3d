"""Train your own PyTorch modules with fedfit, from Python.

Two user models, neither in fedfit's zoo, each trained on a heterogeneous phone fleet with
dynamic batching (every device picks the micro-batch its free memory allows, with gradient
accumulation up to the standard batch) and a memory technique (gradient checkpointing):

* a small ResNet-style CNN with skip connections on the 8×8 digits, handed over as
  ``(train, test)`` and partitioned over the fleet by fedfit's Dirichlet partitioner;
* a GRU text classifier on synthetic token sequences, handed over as a loader returning torch
  ``Dataset`` objects.

fedfit measures each module (FLOPs, saved activations, per-stage costs) instead of assuming
anything about it; its stages are its children in order. Run:

    PYTHONPATH=src python examples/custom_model.py [--rounds 3]
"""

from __future__ import annotations

import argparse

import torch
from torch import nn
from torch.utils.data import TensorDataset

import fedfit
from fedfit.data import load_digits


class Residual(nn.Module):
    """``relu(x + conv(relu(conv(x))))``: a basic residual block (same channels in and out)."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(channels, channels, 3, padding=1), nn.BatchNorm2d(channels), nn.ReLU(),
            nn.Conv2d(channels, channels, 3, padding=1), nn.BatchNorm2d(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x + self.body(x))


def small_resnet(input_shape: tuple[int, ...], num_classes: int, channels: int = 16) -> nn.Module:
    """Stem, two residual blocks, global pooling, linear head: five stages for fedfit."""
    return nn.Sequential(
        nn.Conv2d(input_shape[0], channels, 3, padding=1), nn.ReLU(),
        Residual(channels), Residual(channels),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(channels, num_classes))


class Tokens(nn.Embedding):
    """An embedding that takes token ids as fedfit's float32 inputs."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x.long())


class LastHidden(nn.Module):
    """A GRU over the sequence, returning its last hidden state."""

    def __init__(self, embed: int, hidden: int) -> None:
        super().__init__()
        self.gru = nn.GRU(embed, hidden, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.gru(x)
        return out[:, -1]


def gru_classifier(num_classes: int, vocab: int = 40, embed: int = 16, hidden: int = 32) -> nn.Module:
    """Embedding → GRU → linear head."""
    return nn.Sequential(Tokens(vocab, embed), LastHidden(embed, hidden), nn.Linear(hidden, num_classes))


def token_sequences(n: int = 1200, length: int = 16, vocab: int = 40, classes: int = 4,
                    seed: int = 0) -> tuple[TensorDataset, TensorDataset]:
    """Synthetic text: class ``c`` draws half its tokens from its own tenth of the vocabulary."""
    gen = torch.Generator().manual_seed(seed)
    y = torch.randint(0, classes, (n,), generator=gen)
    noise = torch.randint(0, vocab, (n, length), generator=gen)
    own = y[:, None] * (vocab // classes) + torch.randint(0, vocab // classes, (n, length), generator=gen)
    x = torch.where(torch.rand(n, length, generator=gen) < 0.5, own, noise)
    cut = n * 5 // 6
    return TensorDataset(x[:cut], y[:cut]), TensorDataset(x[cut:], y[cut:])


FLEET = {"flagship_phone": 2, "midrange_phone": 2, "older_phone": 2}


def config(name: str, rounds: int) -> dict[str, object]:
    """Dynamic batching and gradient checkpointing on a six-phone fleet."""
    return {
        "name": name, "seed": 0,
        "fleet": {"tiers": FLEET},
        "data": {"partition": {"kind": "dirichlet", "alpha": 1.0}, "max_test_samples": 300},
        "training": {"batch_size": 16, "lr": 0.05, "local_epochs": 1},
        "orchestration": {"rounds": rounds, "clients_per_round": 4},
        "batching": {"mode": "dynamic"},
        "memory": {"mode": "all", "techniques": ["checkpointing"]},
        "evaluation": {"target_accuracy": 0.5},
        "output": {"progress": False, "plots": False},
    }


def main(rounds: int = 3) -> dict[str, fedfit.Result]:
    """Train both models; return their results."""
    digits_train, digits_test = load_digits()
    results = {
        "resnet-digits": fedfit.run(config("resnet-digits", rounds), model=small_resnet,
                                    data=(digits_train, digits_test)),
        "gru-text": fedfit.run(config("gru-text", rounds), model=gru_classifier, data=token_sequences),
    }
    for name, r in results.items():
        print(f"{name}: accuracy {r.final_accuracy:.3f} after {r.rounds} rounds, "
              f"{r.virtual_time_s:.0f} s virtual, failures {r.failures_by_cause or 'none'}")
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    main(parser.parse_args().rounds)
