"""Whether a planned run has any credential for its model service (issue 19 §2: `plan` said "a
run would launch" for a backend with none). Only names and files are looked at, never a value:
the round's environment as the preparation made it (an API key, an endpoint's token) and the
credential files the backend would copy."""

from __future__ import annotations

from concorde_workers.application.preparation.prepared import Prepared
from concorde_workers.ports.machine.filesystem import PathFacts

__all__ = ["missing_credentials"]

_KEY_SUFFIXES = ("_API_KEY", "_AUTH_TOKEN")


def missing_credentials(fs: PathFacts, prepared: Prepared) -> str | None:
    """The note a plan gives when the run would carry no credential at all, else None."""
    # A key by the name its machine file gives (codex.json's key_env may end in _TOKEN or
    # _SECRET) counts as doctor counts it.
    if any(
        name.endswith(_KEY_SUFFIXES) or name in prepared.key_variables
        for name in prepared.environment
    ):
        return None
    sources = [source for source, _ in prepared.backend.credential_copies(prepared.context)]
    if any(fs.is_file(source) for source in sources):
        return None
    backend = prepared.context.request.backend
    looked = ", ".join([*sources, prepared.backend.profile.credentials.key_text])
    return (
        f"no credentials of the {backend} backend were found (looked at {looked}): the "
        "run would launch, and its model service would refuse it unless it needs none; "
        f"{prepared.backend.profile.credentials.repair}"
    )
