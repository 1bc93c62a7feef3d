"""MobileNetV2 (Sandler et al. 2018, "MobileNetV2: Inverted Residuals and Linear Bottlenecks"):
the on-device vision network, width-scalable, with its width groups declared.

A 3×3 stride-2 stem (32 channels at width 1), then seventeen inverted-residual blocks in the
paper's seven rows ``(expansion t, channels c, blocks n, stride s)`` of :data:`ROWS`, a 1×1
head conv to 1,280 channels, global average pooling and a linear classifier. A block is
``x + project(depthwise(expand(x)))`` when its stride is 1 and its input and output channels
match, else without the ``x``: ``expand`` a 1×1 conv to ``t·cin`` channels (absent when
``t = 1``), ``depthwise`` a 3×3 conv with one filter per channel, both followed by a norm and
ReLU6; ``project`` a 1×1 linear bottleneck with its norm and no activation.

Width ``w`` scales every channel count but the head's 1,280, which the paper keeps for
``w ≤ 1``; channels are ``ceil(c·w)`` (the zoo's rule, :func:`fedfit.models.layers.scaled`) rather
than the paper's rounding to multiples of 8, so that a sub-model's channels are a prefix of the
master's. Width 0.5 has 697,258 parameters at 10 classes; a ``3×96×96`` input is the realistic
on-device size the ``realistic`` tier catalogue is calibrated with
(:mod:`fedfit.devices.realistic`).

Stages are derived from the children in order (stem, ``blocks.0`` .. ``blocks.16``, head).
Width groups (HeteroFL, Diao et al. 2021): one per row (the residual additions tie every block
output of a row to the same channels, and the stem's channels to the first block's depthwise
filters), and one per expanding block for its inner ``t·cin`` channels.
"""

from __future__ import annotations

import torch
from torch import nn

from fedfit.models.coordinates import AxisRef, WidthGroup, layer_inputs, layer_outputs
from fedfit.models.layers import Scaler, norm2d, scaled

#: The paper's Table 2: (expansion t, output channels c, blocks n, first block's stride s).
ROWS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1))
STEM_CHANNELS = 32
HEAD_CHANNELS = 1280


class ConvNorm(nn.Module):
    """Conv → scaler → norm → ReLU6 (``activation=False``: no ReLU6, the linear bottleneck)."""

    def __init__(self, cin: int, cout: int, kernel: int, stride: int, groups: int, norm: str, track: bool,
                 rate: float, activation: bool = True) -> None:
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=norm == "none")
        self.scaler = Scaler(rate)
        self.norm = norm2d(norm, cout, track)
        self.activation = activation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm(self.scaler(self.conv(x)))
        return nn.functional.relu6(h) if self.activation else h

    def output_axes(self, prefix: str) -> tuple[AxisRef, ...]:
        """The conv's output axes and, unless it is an identity, the norm's."""
        extra = layer_outputs(f"{prefix}.norm", self.norm) if not isinstance(self.norm, nn.Identity) else ()
        return (*layer_outputs(f"{prefix}.conv", self.conv), *extra)


class InvertedResidual(nn.Module):
    """Expand (1×1, absent at expansion 1) → depthwise 3×3 → project (1×1, linear), residual
    when the shape is kept."""

    def __init__(self, cin: int, cout: int, stride: int, expansion: int, norm: str, track: bool,
                 rate: float) -> None:
        super().__init__()
        hidden = cin * expansion
        self.expand = ConvNorm(cin, hidden, 1, 1, 1, norm, track, rate) if expansion != 1 else None
        self.depthwise = ConvNorm(hidden, hidden, 3, stride, hidden, norm, track, rate)
        self.project = ConvNorm(hidden, cout, 1, 1, 1, norm, track, rate, activation=False)
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.expand(x) if self.expand is not None else x
        h = self.project(self.depthwise(h))
        return x + h if self.residual else h


class Head(nn.Module):
    """1×1 conv to 1,280 channels (norm, ReLU6), global average pooling, linear classifier."""

    def __init__(self, cin: int, num_classes: int, norm: str, track: bool, rate: float) -> None:
        super().__init__()
        self.conv = ConvNorm(cin, HEAD_CHANNELS, 1, 1, 1, norm, track, rate)
        self.fc = nn.Linear(HEAD_CHANNELS, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.conv(x).mean(dim=(2, 3)))


class MobileNetV2(nn.Module):
    """MobileNetV2 for images of any side ≥ 64 (five stride-2 stages leave at least 2×2, so a
    batch-norm sees more than one value per channel even at micro-batch 1)."""

    def __init__(self, in_channels: int, num_classes: int, width: float = 1.0, *, rate: float = 1.0,
                 norm: str = "none", track_norm_stats: bool = False) -> None:
        super().__init__()
        cin = scaled(STEM_CHANNELS, width)
        self.stem = ConvNorm(in_channels, cin, 3, 2, 1, norm, track_norm_stats, rate)
        blocks: list[nn.Module] = []
        self.rows: list[range] = []
        for expansion, channels, count, stride in ROWS:
            cout = scaled(channels, width)
            self.rows.append(range(len(blocks), len(blocks) + count))
            for i in range(count):
                blocks.append(InvertedResidual(cin, cout, stride if i == 0 else 1, expansion, norm,
                                               track_norm_stats, rate))
                cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.head = Head(cin, num_classes, norm, track_norm_stats, rate)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(self.stem(x)))

    def _block(self, i: int) -> InvertedResidual:
        block = self.blocks[i]
        assert isinstance(block, InvertedResidual)
        return block

    def width_groups(self) -> tuple[WidthGroup, ...]:
        """The stem's channels, one group per row (block outputs and what reads them), and one
        per expanding block (its inner channels)."""
        first = self._block(0)  # expansion 1: its depthwise filters are the stem's channels
        stem = [*self.stem.output_axes("stem"), *first.depthwise.output_axes("blocks.0.depthwise"),
                *layer_inputs("blocks.0.project.conv", first.project.conv)]
        rows: list[list[AxisRef]] = [[] for _ in self.rows]
        inner: list[WidthGroup] = []
        for r, row in enumerate(self.rows):
            for i in row:
                block, name = self._block(i), f"blocks.{i}"
                rows[r].extend(block.project.output_axes(f"{name}.project"))
                if block.expand is not None:
                    rows[r - 1 if i == row.start else r].extend(layer_inputs(f"{name}.expand.conv", block.expand.conv))
                    inner.append(WidthGroup(f"{name}.inner", block.expand.conv.out_channels, (
                        *block.expand.output_axes(f"{name}.expand"), *block.depthwise.output_axes(f"{name}.depthwise"),
                        *layer_inputs(f"{name}.project.conv", block.project.conv))))
        rows[-1].extend(layer_inputs("head.conv.conv", self.head.conv.conv))
        groups = [WidthGroup(f"row{r}", self._block(row.start).project.conv.out_channels, tuple(axes))
                  for r, (row, axes) in enumerate(zip(self.rows, rows, strict=True))]
        return (WidthGroup("stem", self.stem.conv.out_channels, tuple(stem)), *groups, *inner)
