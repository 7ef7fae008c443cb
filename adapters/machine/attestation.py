"""The real `Sealer` (issue 30 §4): a DSSE envelope by securesystemslib, signed and verified
with its `CryptoSigner` and `SSlibKey` over `cryptography`'s Ed25519.

securesystemslib and cryptography are imported when an envelope is sealed or opened, never at
import: `--help` and every command that signs nothing stay as light as before
(tests/integration/test_cli_startup.py).
"""

from __future__ import annotations

import binascii
import json
from dataclasses import replace
from typing import Any

from concorde_workers.ports.machine.attestation import OpenedEnvelope, SealFailed

__all__ = ["DsseSealer"]

MAX_ENVELOPE_BYTES = 64 * 1024 * 1024
"""The most of an envelope `open` reads (its caller reads the file bounded too)."""

KEY_REPAIR = (
    "make one with `openssl genpkey -algorithm ed25519 -out <file>` (no passphrase) and keep "
    "it readable by the host's user only"
)


def _private_key(pem: bytes) -> Any:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        key = load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as error:
        raise SealFailed(f"it is no PEM private key without a passphrase ({error})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise SealFailed(f"it is a {type(key).__name__}, not an Ed25519 private key")
    return key


def _public_key(pem: bytes) -> Any:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    try:
        key = load_pem_public_key(pem)
    except (ValueError, TypeError):
        return _private_key(pem).public_key()  # a private key names its public key too
    if not isinstance(key, Ed25519PublicKey):
        raise SealFailed(f"it is a {type(key).__name__}, not an Ed25519 public key")
    return key


class DsseSealer:
    """DSSE envelopes of securesystemslib; Ed25519 through its CryptoSigner."""

    def seal(self, payload: bytes, payload_type: str, private_key: bytes | None) -> bytes:
        from securesystemslib.dsse import Envelope
        from securesystemslib.signer import CryptoSigner

        envelope = Envelope(payload=payload, payload_type=payload_type, signatures={})
        if private_key is not None:
            envelope.sign(CryptoSigner(_private_key(private_key)))
        return (json.dumps(envelope.to_dict(), indent=2) + "\n").encode()

    def open(self, envelope: bytes, public_key: bytes | None) -> OpenedEnvelope:
        from securesystemslib.dsse import Envelope
        from securesystemslib.exceptions import Error as SslibError
        from securesystemslib.signer import SSlibKey

        try:
            data = json.loads(envelope[:MAX_ENVELOPE_BYTES])
            opened = Envelope.from_dict(data)
        except (ValueError, KeyError, TypeError, binascii.Error, SslibError) as error:
            return OpenedEnvelope(problem=f"it is no DSSE envelope ({type(error).__name__})")
        found = OpenedEnvelope(
            payload=opened.payload,
            payload_type=opened.payload_type,
            key_ids=tuple(opened.signatures),
        )
        if public_key is None:
            return found
        try:
            key = SSlibKey.from_crypto(_public_key(public_key))
        except SealFailed as bad:
            return replace(found, verified=False, problem=f"the public key given: {bad}")
        try:
            opened.verify([key], 1)
        except (SslibError, ValueError) as failed:
            why = "it has no signature" if not opened.signatures else str(failed)
            return replace(
                found,
                verified=False,
                problem=f"the signature does not hold for key {key.keyid}: {why}",
            )
        return replace(found, verified=True)

    def key_problem(self, private_key: bytes) -> str | None:
        try:
            _private_key(private_key)
        except SealFailed as bad:
            return f"{bad}; {KEY_REPAIR}"
        return None

    def key_id(self, key: bytes) -> str | None:
        from securesystemslib.signer import SSlibKey

        try:
            return str(SSlibKey.from_crypto(_public_key(key)).keyid)
        except SealFailed:
            return None
