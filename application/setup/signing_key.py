"""The machine's signing key as the host found it (issue 30 §4), apart from the attestation that
signs with it: `plan` says a key that cannot sign, and loads no trace reader to say it (issue 32
§2).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from concorde_workers.application.setup.machine_files import read_machine_file
from concorde_workers.domain.configuration.signing import SIGNING_KEY_SPEC, signing_key_location
from concorde_workers.domain.ground.codes import Code, Reason
from concorde_workers.domain.ground.errors import Refusal
from concorde_workers.ports.machine.attestation import Sealer
from concorde_workers.ports.machine.filesystem import BoundedReading

__all__ = ["SigningKey"]


@dataclass(frozen=True)
class SigningKey:
    """The machine's signing key as the host found it: where it is looked for, its bytes (None:
    no key, statements unsigned) and why it cannot be used (every run is then refused)."""

    location: str | None = None
    key: bytes | None = None
    problem: str | None = None
    key_id: str | None = None

    def refusal(self) -> Refusal | None:
        """signing_key_invalid for a key that cannot sign: every run is refused before it
        starts, and `plan` says so (a key the machine's owner set must sign or refuse, never
        silently not sign)."""
        if self.problem is None:
            return None
        return Refusal(
            code=Code.SIGNING_KEY_INVALID,
            reason=Reason.INPUT,
            message=self.problem,
            file=self.location,
        )

    @classmethod
    def load(cls, fs: BoundedReading, environ: Mapping[str, str], sealer: Sealer) -> SigningKey:
        """The key at `$CONCORDE_SIGNING_KEY` or beside the model map, through the one reader
        of machine files (application/setup/machine_files.py): a variable that names a relative path
        or no file is a problem; no file at the default place is no key."""
        found = read_machine_file(fs, environ, SIGNING_KEY_SPEC)
        location = found.file or signing_key_location(environ)
        if found.problem is not None:
            return cls(location=location, problem=found.problem)
        if found.file is None or found.text is None:
            return cls(location=location)
        data = found.text.encode()
        problem = sealer.key_problem(data)
        if problem is not None:
            return cls(location=location, problem=f"the signing key {location}: {problem}")
        return cls(location=location, key=data, key_id=sealer.key_id(data))
