"""HTTP routes of deployed SecAgg, over the coordinator's :class:`~fedfit.transport.secagg_hub.SecAggHub`.

``POST /v1/tasks/{id}/secagg/keys`` (JSON: two public keys and the training report),
``GET /v1/tasks/{id}/secagg`` (the cohort's phase and that phase's inputs),
``POST /v1/tasks/{id}/secagg/shares`` (JSON: encrypted shares by recipient),
``POST /v1/tasks/{id}/secagg/masked`` (octet-stream: the masked input) and
``POST /v1/tasks/{id}/secagg/reveal`` (JSON: shares for unmasking). All need the device's
token; a run without SecAgg answers 404 ``secagg_off``. Refusals have the app's one JSON shape.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response

from fedfit.transport.app import Binary, Device, Json
from fedfit.transport.rejection import Rejected
from fedfit.transport.secagg_hub import SecAggHub
from fedfit.transport.secagg_messages import KeysBody, RevealBody, SecAggStatus, SharesBody
from fedfit.transport.service import parse

def _hub(request: Request) -> SecAggHub:
    hub: SecAggHub | None = getattr(request.app.state.coord, "secagg", None)
    if hub is None:
        raise Rejected(404, "secagg_off", "secagg: this run does not use secure aggregation")
    return hub


Hub = Annotated[SecAggHub, Depends(_hub)]


def add_secagg_routes(app: FastAPI) -> None:
    """Register the SecAgg routes on ``app``."""

    @app.post("/v1/tasks/{task_id}/secagg/keys")
    async def keys(hub: Hub, dev: Device, task_id: str, body: Json) -> SecAggStatus:
        return await run_in_threadpool(hub.advertise, dev, task_id, parse(KeysBody, body, "secagg_keys"))

    @app.get("/v1/tasks/{task_id}/secagg")
    async def status(hub: Hub, dev: Device, task_id: str) -> SecAggStatus:
        return await run_in_threadpool(hub.status, dev, task_id)

    @app.post("/v1/tasks/{task_id}/secagg/shares", status_code=204)
    async def shares(hub: Hub, dev: Device, task_id: str, body: Json) -> Response:
        await run_in_threadpool(hub.shares, dev, task_id, parse(SharesBody, body, "secagg_shares"))
        return Response(status_code=204)

    @app.post("/v1/tasks/{task_id}/secagg/masked", status_code=204)
    async def masked(hub: Hub, dev: Device, task_id: str, body: Binary) -> Response:
        await run_in_threadpool(hub.masked, dev, task_id, body)
        return Response(status_code=204)

    @app.post("/v1/tasks/{task_id}/secagg/reveal", status_code=204)
    async def reveal(hub: Hub, dev: Device, task_id: str, body: Json) -> Response:
        await run_in_threadpool(hub.reveal, dev, task_id, parse(RevealBody, body, "secagg_reveal"))
        return Response(status_code=204)
