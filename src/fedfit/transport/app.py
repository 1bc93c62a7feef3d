"""The FastAPI app: thin routes over a :class:`~fedfit.transport.service.Coordinator`.

Auth, body-size cap and content type are dependencies; every refusal is one JSON shape,
``{"error": code, "detail": one line}``, counted by code in ``GET /metrics`` and in
``metrics.jsonl``.
"""

from __future__ import annotations

import asyncio
import html
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Header, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from starlette.requests import ClientDisconnect

from fedfit.transport.messages import EnrolResponse, TaskMessage
from fedfit.transport.rejection import Rejected
from fedfit.transport.service import Coordinator, parse
from fedfit.transport.messages import EnrolRequest

Lifespan = Callable[[FastAPI], AbstractAsyncContextManager[None]]


def _coord(request: Request) -> Coordinator:
    coord: Coordinator = request.app.state.coord
    return coord


async def _device(request: Request, authorization: Annotated[str | None, Header()] = None) -> int:
    return _coord(request).authenticate(authorization)


def _body_of(kind: str) -> Callable[[Request], Awaitable[bytes]]:
    async def read(request: Request) -> bytes:
        ctype = request.headers.get("content-type", "").split(";")[0].strip()
        if ctype != kind:
            raise Rejected(415, "content_type", f"body: content type must be {kind}, got {ctype or 'none'}")
        return await capped(request, _coord(request).limits.max_body_bytes)
    return read


Device = Annotated[int, Depends(_device)]
Json = Annotated[bytes, Depends(_body_of("application/json"))]
Binary = Annotated[bytes, Depends(_body_of("application/octet-stream"))]


def create_app(coord: Coordinator, lifespan: Lifespan | None = None, poll_wait_s: float = 10.0) -> FastAPI:
    """The server's app over ``coord`` (``lifespan`` starts and stops the round loop)."""
    app = FastAPI(title="fedfit", lifespan=lifespan)
    app.state.coord = coord

    @app.exception_handler(Rejected)
    async def rejected(_: Request, err: Rejected) -> JSONResponse:
        coord.reject(err)
        return JSONResponse({"error": err.code, "detail": str(err)}, status_code=err.status)

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, err: RequestValidationError) -> JSONResponse:
        first = err.errors()[0]
        err2 = Rejected(422, "bad_request", f"{'.'.join(map(str, first['loc']))}: {first['msg']}")
        return await rejected(_, err2)

    @app.post("/v1/enrol")
    async def enrol(body: Json) -> EnrolResponse:
        return await run_in_threadpool(coord.enrol, parse(EnrolRequest, body, "enrol"))

    @app.post("/v1/heartbeat", status_code=204)
    async def heartbeat(dev: Device, body: Json) -> Response:
        coord.heartbeat(dev, body)
        return Response(status_code=204)

    @app.post("/v1/readiness", status_code=204)
    async def readiness(dev: Device, body: Json) -> Response:
        coord.readiness(dev, body)
        return Response(status_code=204)

    @app.get("/v1/config")
    async def config(x_fleet_secret: Annotated[str | None, Header()] = None) -> dict[str, object]:
        coord.check_secret(x_fleet_secret or "")
        return coord.config_body

    @app.get("/v1/task", response_model=None)
    async def task(dev: Device, wait_s: float = 0.0) -> TaskMessage | Response:
        deadline = asyncio.get_running_loop().time() + min(max(wait_s, 0.0), poll_wait_s)
        while (found := coord.task(dev)) is None and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.1)
        return found if found is not None else Response(status_code=204)

    @app.get("/v1/tasks/{task_id}/model")
    async def model(dev: Device, task_id: str) -> Response:
        return Response(coord.model(dev, task_id), media_type="application/octet-stream")

    @app.post("/v1/tasks/{task_id}/update")
    async def update(dev: Device, task_id: str, body: Binary) -> dict[str, object]:
        seq = await run_in_threadpool(coord.upload, dev, task_id, body)
        return {"accepted": True, "journal_seq": seq}

    @app.post("/v1/tasks/{task_id}/failure", status_code=204)
    async def failure(dev: Device, task_id: str, body: Json) -> Response:
        await run_in_threadpool(coord.failure, dev, task_id, body)
        return Response(status_code=204)

    from fedfit.transport.secagg_routes import add_secagg_routes  # imports this module's dependencies
    add_secagg_routes(app)

    @app.get("/metrics")
    async def metrics() -> dict[str, object]:
        return coord.status | {"rejected_requests": dict(coord.rejections), "finished": coord.finished}

    @app.get("/", response_class=HTMLResponse)
    async def index() -> str:
        return status_page(coord.status | {"rejected_requests": dict(coord.rejections)})

    return app


async def capped(request: Request, limit: int) -> bytes:
    """The request body, refused with 413 as soon as it exceeds ``limit`` bytes (before reading it
    whole when ``Content-Length`` says so)."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > limit):
        raise Rejected(413, "body_too_large", f"body: {declared} bytes declared, limit {limit}")
    chunks, size = [], 0
    stream: AsyncIterator[bytes] = request.stream()
    try:
        async for chunk in stream:
            size += len(chunk)
            if size > limit:
                raise Rejected(413, "body_too_large", f"body: more than {limit} bytes")
            chunks.append(chunk)
    except ClientDisconnect:
        raise Rejected(400, "client_disconnect", "body: the client went away while sending it") from None
    return b"".join(chunks)


def status_page(status: dict[str, Any]) -> str:
    """The read-only HTML status page."""
    rows = "".join(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>"
                   for k, v in status.items())
    return f"<!doctype html><title>fedfit server</title><h1>fedfit server</h1><table>{rows}</table>"
