"""The worker run's identity and its runtime directory's name (seed 000 "Run directory and runtime
directory"; design.md "Placement of the run directory").

A run id is `w-<YYYYMMDD>T<HHMMSS>-<6 hex digits>` in UTC, with lower-case hex digits (the form
the host generates; an upper-case id is not one of ours). The runtime directory is
`concorde-<the run id's 6 hex>-<random>` directly under /tmp: short, so that the Unix socket paths
Claude Code's sandbox and sandbox-runtime create below its tmp/ stay under the 108-byte limit.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

_HEX6 = re.compile(r"[0-9a-f]{6}\Z")
_RUN_ID = re.compile(r"w-(\d{8}T\d{6})-([0-9a-f]{6})\Z")
_RANDOM = re.compile(r"[A-Za-z0-9_]{1,32}\Z")

RUNTIME_PREFIX = "concorde-"
SOCKET_PATH_LIMIT = 108
"""sockaddr_un.sun_path: a Unix socket path must stay under 108 bytes."""


def run_id(now_utc: datetime, hex6: str) -> str:
    """`w-<YYYYMMDD>T<HHMMSS>-<hex6>` for an aware time (converted to UTC); a naive time or a
    `hex6` that is not six lower-case hex digits is a ValueError."""
    if now_utc.tzinfo is None or now_utc.utcoffset() is None:
        raise ValueError("run_id needs an aware UTC time, got a naive datetime")
    if not _HEX6.match(hex6):
        raise ValueError(f"expected 6 lower-case hex digits, got {hex6!r}")
    stamp = now_utc.astimezone(UTC).strftime("%Y%m%dT%H%M%S")
    return f"w-{stamp}-{hex6}"


def is_run_id(text: object) -> bool:
    """True for a run id of the host's form with a real calendar time."""
    if not isinstance(text, str):
        return False
    match = _RUN_ID.match(text)
    if match is None:
        return False
    try:
        datetime.strptime(match.group(1), "%Y%m%dT%H%M%S")
    except ValueError:
        return False
    return True


def run_id_hex(run_id_text: str) -> str:
    """The six hex digits that end a run id."""
    if not is_run_id(run_id_text):
        raise ValueError(f"not a run id: {run_id_text!r}")
    return run_id_text[-6:]


def runtime_directory_prefix(run_id_text: str) -> str:
    """`concorde-<6 hex>-`: the prefix to give a private-directory maker (mkdtemp), which adds
    the random part."""
    return f"{RUNTIME_PREFIX}{run_id_hex(run_id_text)}-"


def runtime_directory_name(run_id_text: str, random: str) -> str:
    """`concorde-<6 hex of the run id>-<random>`; `random` is 1 to 32 letters, digits or `_`."""
    if not _RANDOM.match(random):
        raise ValueError(f"the random part must be 1-32 letters, digits or _, got {random!r}")
    return f"{runtime_directory_prefix(run_id_text)}{random}"
