"""The ``deploy:`` section: a real federation over HTTP (``fedfit server`` / ``fedfit device``)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from fedfit.config.base import Section


class DeployConfig(Section):
    """Real deployment (``fedfit server`` / ``fedfit device``): request limits and timeouts."""

    max_body_bytes: Annotated[int, Field(gt=0)] = 64 * 2**20
    max_update_norm: Annotated[float, Field(gt=0)] = 1e4
    heartbeat_timeout_s: Annotated[float, Field(gt=0)] = 30.0
    task_timeout_s: Annotated[float, Field(gt=0)] = 600.0
    poll_wait_s: Annotated[float, Field(gt=0, le=60)] = 10.0
    linger_s: Annotated[float, Field(ge=0)] = 10.0
