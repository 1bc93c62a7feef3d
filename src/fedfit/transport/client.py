"""The device's side of the protocol over an ``httpx.Client`` (tests pass a TestClient or a
MockTransport-backed client). Transport errors and 5xx answers are retried with exponential
backoff, so a device rides out a server restart; a 4xx is final and raised as :class:`Refused`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx

from fedfit.transport.messages import FailureReport, ProfileReport, ReadinessReport, StateReport, TaskMessage


class Refused(Exception):
    """The server refused a request (4xx); ``code`` is its error code."""

    def __init__(self, status: int, code: str, detail: str) -> None:
        super().__init__(f"{status} {code}: {detail}")
        self.status, self.code = status, code


class DeviceClient:
    """Protocol calls of one device.

    Args:
        http: the HTTP client (base URL set; TLS verification configured by the caller).
        secret: the fleet secret (enrolment only).
        attempts: tries per request before giving up on an unreachable server.
        backoff_s: first retry delay, doubled up to 5 s.
    """

    def __init__(self, http: httpx.Client, secret: str, attempts: int = 30, backoff_s: float = 0.25,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.http, self._secret, self._attempts, self._backoff, self._sleep = http, secret, attempts, backoff_s, sleep
        self.token: str | None = None
        self.device_id: int | None = None
        #: (bytes, seconds) of the config download: the device's first bandwidth measurement.
        self.config_transfer: tuple[int, float] | None = None

    def _call(self, method: str, url: str, **kw: Any) -> httpx.Response:
        headers = kw.pop("headers", {}) | ({"Authorization": f"Bearer {self.token}"} if self.token else {})
        delay = self._backoff
        for attempt in range(self._attempts):
            try:
                resp = self.http.request(method, url, headers=headers, **kw)
            except httpx.TransportError:
                if attempt == self._attempts - 1:
                    raise
            else:
                if resp.status_code < 500:
                    break
            self._sleep(delay)
            delay = min(delay * 2, 5.0)
        if resp.status_code >= 400:
            body = _json(resp)
            raise Refused(resp.status_code, str(body.get("error", "error")), str(body.get("detail", resp.text[:200])))
        return resp

    def enrol(self, profile: ProfileReport, slot: int | None = None) -> int:
        """Enrol; ``slot``: the slot (device id) asked for, ``None`` for the next free one."""
        body = {"secret": self._secret, "profile": profile.model_dump(mode="json"), "slot": slot}
        out = self._call("POST", "/v1/enrol", json=body).json()
        self.token, self.device_id = str(out["token"]), int(out["device_id"])
        return self.device_id

    def heartbeat(self, state: StateReport) -> None:
        self._call("POST", "/v1/heartbeat", content=state.model_dump_json(),
                   headers={"Content-Type": "application/json"})

    def readiness(self, report: ReadinessReport) -> None:
        """Answer the readiness query (seed 000): ready or not, why, and the batch affordable now."""
        self._call("POST", "/v1/readiness", content=report.model_dump_json(),
                   headers={"Content-Type": "application/json"})

    def config(self) -> dict[str, Any]:
        """The run's config and model spec (the fleet secret suffices: asked before enrolling)."""
        start = time.perf_counter()
        resp = self._call("GET", "/v1/config", headers={"X-Fleet-Secret": self._secret})
        self.config_transfer = (len(resp.content), max(time.perf_counter() - start, 1e-6))
        out: dict[str, Any] = resp.json()
        return out

    def next_task(self, wait_s: float) -> TaskMessage | None:
        """The device's next task, waiting up to ``wait_s`` (``None``: none yet).

        Raises:
            Refused: 410 ``run_finished`` when the run is over.
        """
        resp = self._call("GET", "/v1/task", params={"wait_s": wait_s})
        return None if resp.status_code == 204 else TaskMessage.model_validate_json(resp.content)

    def download(self, task_id: str) -> tuple[bytes, float]:
        start = time.perf_counter()
        data = self._call("GET", f"/v1/tasks/{task_id}/model").content
        return data, max(time.perf_counter() - start, 1e-6)

    def upload(self, task_id: str, payload: bytes) -> dict[str, Any]:
        out: dict[str, Any] = self._call("POST", f"/v1/tasks/{task_id}/update", content=payload,
                                         headers={"Content-Type": "application/octet-stream"}).json()
        return out

    def fail(self, task_id: str, report: FailureReport) -> None:
        self._call("POST", f"/v1/tasks/{task_id}/failure", content=report.model_dump_json(),
                   headers={"Content-Type": "application/json"})


def _json(resp: httpx.Response) -> dict[str, Any]:
    try:
        body = resp.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}
