"""The machine's signing key (issue 30 §4): where it lies, and what `init` and `doctor` say of it.

Every run ends with an in-toto statement of what it did (domain/attestation/statement.py); the
host signs it with this machine's Ed25519 private key when there is one: `$CONCORDE_SIGNING_KEY`
(an absolute path), else `signing-key.pem` beside the model map
(`~/.config/concorde/signing-key.pem`). The key is the host's alone: like the credentials at
their origin, no worker can read it (domain/configuration/credentials.py lists it among the files
hidden always), and it never lies in a worktree. Without one the statement is written unsigned,
and `verify` says so.

Pure: the environment comes in as a Mapping; application/evidence/attestation.py reads the file.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass

from concorde_workers.domain.configuration.machine import MachineFileSpec, machine_file_location

__all__ = [
    "MAX_KEY_BYTES",
    "SIGNING_KEY_FILE",
    "SIGNING_KEY_SPEC",
    "SIGNING_KEY_VARIABLE",
    "KeyFact",
    "make_key_commands",
    "signing_key_location",
]

SIGNING_KEY_FILE = "signing-key.pem"
SIGNING_KEY_VARIABLE = "CONCORDE_SIGNING_KEY"
MAX_KEY_BYTES = 16 * 1024
"""The most of a key file read: a PEM Ed25519 key is 119 bytes."""
SIGNING_KEY_SPEC = MachineFileSpec(
    variable=SIGNING_KEY_VARIABLE,
    name=SIGNING_KEY_FILE,
    max_bytes=MAX_KEY_BYTES,
    shape='README "A signed account of each run" says how to make it',
)


def signing_key_location(environ: Mapping[str, str]) -> str | None:
    """`$CONCORDE_SIGNING_KEY` when set (relative: returned as given, and refused by its
    reader), else `signing-key.pem` beside the model map; None when neither can be found."""
    named = environ.get(SIGNING_KEY_VARIABLE, "")
    if named and not named.startswith("/"):
        return named
    return machine_file_location(environ, SIGNING_KEY_SPEC).file


def make_key_commands(location: str) -> tuple[str, ...]:
    """How a person makes the key at `location` and the public key a reviewer verifies with."""
    public = posixpath.splitext(location)[0] + ".pub.pem"
    return (
        f"(umask 077 && openssl genpkey -algorithm ed25519 -out {location})",
        f"openssl pkey -in {location} -pubout -out {public}",
    )


@dataclass(frozen=True)
class KeyFact:
    """The machine's signing key as found: where it is looked for (None: nowhere, no HOME),
    its key id when it can sign, or why it cannot."""

    location: str | None
    key_id: str | None = None
    problem: str | None = None

    def said(self) -> tuple[bool, str, str]:
        """(whether runs can go, what doctor says, the repair) — a key that is absent is no
        failure: the statements are then unsigned, and `verify` says so."""
        if self.problem is not None:
            return False, self.problem, "repair or replace the key, or unset CONCORDE_SIGNING_KEY"
        if self.location is None:
            return True, "no place for it (no HOME): each run's statement is unsigned", ""
        if self.key_id is None:
            make, public = make_key_commands(self.location)
            return (
                True,
                f"none at {self.location}: each run's statement is written unsigned; to sign "
                f"them, make this machine's key with `{make}`, keep it there (the host alone "
                f"reads it; no worker can), and give reviewers its public key: `{public}`",
                "",
            )
        return True, f"{self.location} (Ed25519, key id {self.key_id}): each run is signed", ""
