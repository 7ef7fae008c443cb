"""The capability of sealing a run's statement in a DSSE envelope and opening one (issue 30 §4).

A `Sealer` wraps a payload in a DSSE envelope, signed with an Ed25519 private key when one is
given (none: an envelope with no signature, which `verify` says is unsigned), and opens an
envelope: its payload, and whether a public key's signature over it holds. The real one is
securesystemslib's DSSE and its `CryptoSigner` over `cryptography`
(adapters/machine/attestation.py): no envelope and no cryptography of our own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ["OpenedEnvelope", "SealFailed", "Sealer"]


class SealFailed(ValueError):
    """A key that cannot sign (not PEM, not Ed25519, protected by a passphrase), or a payload
    that cannot be sealed; the message says which and the repair."""


@dataclass(frozen=True)
class OpenedEnvelope:
    """What an envelope holds: its payload and type, the key ids of its signatures, whether
    the public key given verifies one (None: no key was given), and the problem when the
    envelope could not be read or the signature does not hold."""

    payload: bytes = b""
    payload_type: str = ""
    key_ids: tuple[str, ...] = ()
    verified: bool | None = None
    problem: str | None = None


@runtime_checkable
class Sealer(Protocol):
    def seal(self, payload: bytes, payload_type: str, private_key: bytes | None) -> bytes:
        """The DSSE envelope's JSON (UTF-8, ending in a newline), signed with `private_key`
        (a PEM Ed25519 private key) when given. Raises `SealFailed`."""
        ...

    def open(self, envelope: bytes, public_key: bytes | None) -> OpenedEnvelope:
        """The envelope read, and its signature checked against `public_key` (a PEM Ed25519
        public key) when given. Never raises: a problem is said in the answer."""
        ...

    def key_problem(self, private_key: bytes) -> str | None:
        """Why `private_key` cannot sign, or None (doctor, and before a run)."""
        ...

    def key_id(self, key: bytes) -> str | None:
        """The key id (securesystemslib's) of a PEM Ed25519 public or private key, None when it
        is no such key."""
        ...
