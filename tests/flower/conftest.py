"""Flower tests: Flower's telemetry stays off (each module skips itself where Flower is missing)."""

from __future__ import annotations

import os

os.environ.setdefault("FLWR_TELEMETRY_ENABLED", "0")
