"""An exported sub-model loads from a ``Path`` or a ``str``."""

from __future__ import annotations

from pathlib import Path

import torch

from fedfit.models import ModelSpec
from fedfit.report.model_file import export_submodel, load_exported


def test_load_exported_accepts_a_string_path(tmp_path: Path) -> None:
    spec = ModelSpec("logreg", (1, 8, 8), 10)
    module = spec.build()
    export_submodel(tmp_path / "exp", spec, 1.0, module)

    loaded = load_exported(str(tmp_path / "exp"))

    x = torch.randn(3, 1, 8, 8)
    assert torch.allclose(loaded(x), module.eval()(x))
