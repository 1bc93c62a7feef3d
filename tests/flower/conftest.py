"""Flower tests run only where Flower (the ``flower`` extra) is installed."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("FLWR_TELEMETRY_ENABLED", "0")
pytest.importorskip("flwr", reason="Flower interop needs the extra: pip install fedfit[flower]")
