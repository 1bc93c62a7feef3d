"""A CIFAR-style residual network (He et al. 2016, "Deep Residual Learning for Image
Recognition", section 4.2): ResNet-(6n+2), width-scalable, with its width groups declared.

A 3×3 stem, then three levels of ``n`` basic blocks (16, 32, 64 channels at width 1; the first
block of the second and third level halves the resolution), global average pooling and a linear
head. A block is ``relu(bn(conv(relu(bn(conv(x))))) + shortcut(x))``; the shortcut is the
identity, or a 1×1 projection with its norm where the shape changes (He et al.'s option B).
``n = 1`` is ResNet-8, ``n = 3`` ResNet-20 (272 k parameters at width 1).

The module's children, in order, are its forward (stem, ``blocks.0`` .. ``blocks.3n-1``, head),
so its stages are derived (:func:`fedfit.models.custom.derived_stages`): one per block.
Width groups (HeteroFL, Diao et al. 2021): one per level, since the identity shortcuts tie
every block output of a level to the same channels, and one per block for its inner channels.
"""

from __future__ import annotations

import torch
from torch import nn

from fedfit.models.coordinates import AxisRef, WidthGroup, layer_inputs, layer_outputs
from fedfit.models.layers import Scaler, norm2d, scaled

LEVEL_CHANNELS = (16, 32, 64)


class Stem(nn.Module):
    """3×3 conv → scaler → norm → ReLU."""

    def __init__(self, in_channels: int, channels: int, norm: str, track: bool, rate: float) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_channels, channels, 3, padding=1, bias=norm == "none")
        self.norm = norm2d(norm, channels, track)
        self.scaler = Scaler(rate)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.norm(self.scaler(self.conv(x))))


class BasicBlock(nn.Module):
    """Two 3×3 convs with a residual connection (projected when the shape changes)."""

    def __init__(self, cin: int, cout: int, stride: int, norm: str, track: bool, rate: float) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=norm == "none")
        self.norm1 = norm2d(norm, cout, track)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=norm == "none")
        self.norm2 = norm2d(norm, cout, track)
        self.scaler = Scaler(rate)
        self.proj: nn.Module | None = None
        self.proj_norm: nn.Module | None = None
        if stride != 1 or cin != cout:
            self.proj = nn.Conv2d(cin, cout, 1, stride=stride, bias=norm == "none")
            self.proj_norm = norm2d(norm, cout, track)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.norm1(self.scaler(self.conv1(x))))
        h = self.norm2(self.scaler(self.conv2(h)))
        skip = x if self.proj is None or self.proj_norm is None else self.proj_norm(self.scaler(self.proj(x)))
        return torch.relu(h + skip)


class Head(nn.Module):
    """Global average pooling and a linear classifier."""

    def __init__(self, channels: int, num_classes: int) -> None:
        super().__init__()
        self.fc = nn.Linear(channels, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x.mean(dim=(2, 3)))


class ResNet(nn.Module):
    """ResNet-(6n+2) for small images (any side ≥ 4)."""

    def __init__(self, in_channels: int, num_classes: int, blocks_per_level: int, width: float = 1.0, *,
                 rate: float = 1.0, norm: str = "none", track_norm_stats: bool = False) -> None:
        super().__init__()
        widths = [scaled(c, width) for c in LEVEL_CHANNELS]
        self.stem = Stem(in_channels, widths[0], norm, track_norm_stats, rate)
        blocks: list[nn.Module] = []
        cin = widths[0]
        for level, cout in enumerate(widths):
            for i in range(blocks_per_level):
                stride = 2 if level > 0 and i == 0 else 1
                blocks.append(BasicBlock(cin, cout, stride, norm, track_norm_stats, rate))
                cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.head = Head(cin, num_classes)
        self.blocks_per_level = blocks_per_level

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(self.stem(x)))

    def _block(self, i: int) -> BasicBlock:
        block = self.blocks[i]
        assert isinstance(block, BasicBlock)
        return block

    def width_groups(self) -> tuple[WidthGroup, ...]:
        """One group per level (every block output and shortcut of it, and what reads them), and
        one per block (its inner channels)."""
        n = self.blocks_per_level
        level_axes: list[list[AxisRef]] = [list(_norm_axes("stem", self.stem.conv, self.stem.norm)), [], []]
        groups = []
        for i in range(3 * n):
            block, name, level = self._block(i), f"blocks.{i}", i // n
            source = (i - 1) // n if i else 0  # the level of the block's input
            level_axes[level].extend(_norm_axes(name, block.conv2, block.norm2, "conv2", "norm2"))
            level_axes[source].extend(layer_inputs(f"{name}.conv1", block.conv1))
            if block.proj is not None and block.proj_norm is not None:
                level_axes[level].extend(_norm_axes(name, block.proj, block.proj_norm, "proj", "proj_norm"))
                level_axes[source].extend(layer_inputs(f"{name}.proj", block.proj))
            groups.append(WidthGroup(f"{name}.inner", block.conv1.out_channels,
                                     (*_norm_axes(name, block.conv1, block.norm1, "conv1", "norm1"),
                                      *layer_inputs(f"{name}.conv2", block.conv2))))
        level_axes[2].extend(layer_inputs("head.fc", self.head.fc))
        levels = [WidthGroup(f"level{lv}", self._block(lv * n).conv2.out_channels, tuple(axes))
                  for lv, axes in enumerate(level_axes)]
        return (*levels, *groups)


def _norm_axes(prefix: str, conv: nn.Module, norm: nn.Module, conv_name: str = "conv",
               norm_name: str = "norm") -> tuple[AxisRef, ...]:
    """Output axes of ``prefix.conv_name`` and, unless it is an identity, of its norm."""
    extra = layer_outputs(f"{prefix}.{norm_name}", norm) if not isinstance(norm, nn.Identity) else ()
    return (*layer_outputs(f"{prefix}.{conv_name}", conv), *extra)
