"""The one error every request check raises: an HTTP status, a short code and a one-line reason."""

from __future__ import annotations

from fedfit.errors import FedfitError


class Rejected(FedfitError):
    """A request was refused before it touched state.

    Attributes:
        status: the HTTP status (a 4xx).
        code: a short stable name of the check that failed (counted in metrics).
    """

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code = status, code
