"""A device's identity on disk (``fedfit device --state FILE``): its slot and token, so a device
process started again rejoins the fleet as the same device instead of enrolling anew.

The file is JSON ``{"server": URL, "device_id": N, "token": T}``, written atomically (a temp
file created with mode 0600, fsync, rename, fsync of the directory): a crash leaves the old
file or the new one, and no other user can read the token.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from fedfit.errors import ConfigError
from fedfit.report.atomic import staged


@dataclass(frozen=True)
class Identity:
    """The slot and token a server gave a device (the server keeps only the token's hash)."""

    server: str
    device_id: int
    token: str


def load_identity(path: Path) -> Identity | None:
    """The identity saved at ``path`` (``None``: no file yet).

    Raises:
        ConfigError: the file exists but is not an identity file.
    """
    try:
        raw = json.loads(path.read_text())
        return Identity(server=str(raw["server"]), device_id=int(raw["device_id"]), token=str(raw["token"]))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ConfigError(f"--state {path}: not a fedfit device state file ({type(err).__name__})") from None


def save_identity(path: Path, identity: Identity) -> None:
    """Write ``identity`` to ``path`` atomically, readable by its owner only (mode 0600)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps({"server": identity.server, "device_id": identity.device_id, "token": identity.token})
    with staged(path) as tmp:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.fchmod(fd, 0o600)  # O_CREAT's mode is masked by the umask; a leftover temp keeps its own
            os.write(fd, data.encode())
        finally:
            os.close(fd)
