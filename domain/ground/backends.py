"""The agent programs the contracts know by name: seed 002's backend enums (the worker
configuration's `backend`, the run record's per-round object, the event schema), defined here
once, and the backend a worker runs on when nothing sets one. Light on purpose: the command
line's grammar names them without loading a model."""

from __future__ import annotations

__all__ = [
    "BACKENDS",
    "DEFAULT_BACKEND",
    "DEMO_BACKENDS",
    "EXTENSION_CONTRACTS",
    "SEED_BACKENDS",
    "Backend",
    "contract_for",
]

SEED_BACKENDS: tuple[str, ...] = ("claude", "pi")
"""The backends seed 002's seven contracts name (their enums stay verbatim)."""
BACKENDS: tuple[Backend, ...] = ("claude", "pi", "codex")
"""Every backend there is: the seed's and the Codex CLI (issue 33), which our own extension
contracts name (`EXTENSION_CONTRACTS`, docs/decisions.md 72)."""
DEMO_BACKENDS: tuple[str, ...] = ("pi", "codex")
"""The backends `concorde-workers demo` runs offline, each against a scripted server of its wire
that the package ships (adapters/demo/): pi's OpenAI-compatible chat completions and the Codex
CLI's Responses API. Claude Code's Anthropic wire has no such server in the package."""
EXTENSION_CONTRACTS: dict[str, str] = {
    "contract.workers.worker-configuration": "contract.concorde.worker-configuration-codex",
    "contract.workers.model-map": "contract.concorde.model-map-codex",
    "contract.workers.worker-run-record": "contract.concorde.worker-run-record-codex",
}
"""Each seed contract a backend beyond the seed extends, and its extension (the seed's schema
with the backend added to its enums and per-backend objects)."""
_DEPTH = 16


def contract_for(contract_id: str, value: object) -> str:
    """The contract a value is checked against: the seed's, unless the value names a backend
    beyond the seed (a `backend` of that name, or an object key of that name, such as a model
    map's entry), then its extension; a value naming only the seed's backends is checked exactly
    as before."""
    extension = EXTENSION_CONTRACTS.get(contract_id)
    if extension is None or not _names_beyond_the_seed(value, _DEPTH):
        return contract_id
    return extension


def _names_beyond_the_seed(value: object, depth: int) -> bool:
    beyond = [b for b in BACKENDS if b not in SEED_BACKENDS]
    if depth <= 0:
        return False
    if isinstance(value, dict):
        if any(key in beyond for key in value) or value.get("backend") in beyond:
            return True
        return any(_names_beyond_the_seed(v, depth - 1) for v in value.values())
    if isinstance(value, list):
        return any(_names_beyond_the_seed(v, depth - 1) for v in value)
    return False


DEFAULT_BACKEND: Backend = "pi"
"""The backend a worker runs on when no entry of its configuration sets one (seed 002 "Worker
configuration": "A backend no entry sets is pi")."""

# `Backend`, the agent programs a worker runs on (domain.ground.record_fields and
# domain.configuration.request name it too), is `Literal[BACKENDS]`. It is built when a model
# first asks for it: `typing` is a tenth of `--help`, which only needs the names (issue 32 §2).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal

    Backend = Literal["claude", "pi", "codex"]
else:

    def __getattr__(name: str) -> object:
        if name == "Backend":
            from typing import Literal

            return Literal[BACKENDS]
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
