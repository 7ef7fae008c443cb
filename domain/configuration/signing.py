"""The machine's signing key (issue 30 §4): where it lies, and what `init` and `doctor` say of it.

Every run ends with an in-toto statement of what it did (domain/attestation/statement.py); the
host signs it with this machine's Ed25519 private key when there is one: `$CONCORDE_SIGNING_KEY`
(an absolute path), else `signing-key.pem` beside the model map
(`~/.config/concorde/signing-key.pem`). The key is the host's alone: like the credentials at
their origin, no worker can read it (domain/boundary/credentials.py lists it among the files
hidden always), and it never lies in a worktree. Without one the statement is written unsigned,
and `verify` says so.

Pure: the environment comes in as a Mapping; application/attestation.py reads the file.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping

from concorde_workers.domain.configuration.machine import model_map_location

__all__ = [
    "MAX_KEY_BYTES",
    "SIGNING_KEY_FILE",
    "SIGNING_KEY_VARIABLE",
    "make_key_commands",
    "signing_key_location",
]

SIGNING_KEY_FILE = "signing-key.pem"
SIGNING_KEY_VARIABLE = "CONCORDE_SIGNING_KEY"
MAX_KEY_BYTES = 16 * 1024
"""The most of a key file read: a PEM Ed25519 key is 119 bytes."""


def signing_key_location(environ: Mapping[str, str]) -> str | None:
    """`$CONCORDE_SIGNING_KEY` when set (relative: returned as given, and refused by its
    reader), else `signing-key.pem` beside the model map; None when neither can be found."""
    named = environ.get(SIGNING_KEY_VARIABLE, "")
    if named:
        return posixpath.normpath(named) if named.startswith("/") else named
    location = model_map_location(environ, [], {})  # only its folder
    if not isinstance(location, str):
        return None
    return posixpath.join(posixpath.dirname(location), SIGNING_KEY_FILE)


def make_key_commands(location: str) -> tuple[str, ...]:
    """How a person makes the key at `location` and the public key a reviewer verifies with."""
    public = posixpath.splitext(location)[0] + ".pub.pem"
    return (
        f"(umask 077 && openssl genpkey -algorithm ed25519 -out {location})",
        f"openssl pkey -in {location} -pubout -out {public}",
    )
