"""The checks' copies as a sweep sees them (issue 9 §1 for issue 13's checks; docs/decisions.md
"Check copies have an owner").

A check runs over a throwaway copy of the worktree, and the run keeps a copy of its starting
state for the whole run. A host killed without a chance to act (SIGKILL, the out-of-memory
killer) leaves them in the runtime parent. So every copy is a folder
`concorde-check-<12 hex>/` that holds the host's owner record `owner.json` (written before the
copy exists) and the copy itself, `tree/`, the only part a check ever sees. A sweep removes the
folder once its host is dead, judged as a runtime directory's host is
(`domain.evidence.sweep.judge_host`:
pid, start time, boot id, PID namespace); a folder without a usable owner record only once older
than the margin, as a runtime directory.

Pure: the names, the owner record's text and parsing, and the judgement from gathered facts.
"""

from __future__ import annotations

import json
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from concorde_workers.domain.evidence.sweep import (
    OWNERLESS_MARGIN_SECONDS,
    Judgement,
    ProcessIdentity,
    ProcessObservation,
    Verdict,
    judge_host,
    judge_ownerless,
)
from concorde_workers.domain.ground import json_limits
from concorde_workers.domain.ground.paths import EntryKind

COPY_PREFIX = "concorde-check-"
COPY_OWNER_FILE = "owner.json"
"""The owner record's name in a copy's folder, beside `COPY_TREE`."""
COPY_TREE = "tree"
"""The copy itself in its folder: what a check sees at the worktree's path."""
COPY_OWNER_KIND = "concorde-workers.check-copy-owner"

_NAME = re.compile(re.escape(COPY_PREFIX) + r"[0-9a-f]{12}\Z")


def is_copy_name(name: str) -> bool:
    """Whether `name` is a copy folder's: `concorde-check-<12 hex>`."""
    return _NAME.match(name) is not None


class CopyOwner(BaseModel):
    """owner.json of a copy's folder: the host that made it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["concorde-workers.check-copy-owner"]
    version: Literal[1]
    host: ProcessIdentity

    @classmethod
    def of(cls, host: ProcessIdentity) -> CopyOwner:
        return cls(kind=COPY_OWNER_KIND, version=1, host=host)


def copy_owner_text(owner: CopyOwner) -> str:
    """The owner record as written: one JSON object, ending in a newline."""
    return json.dumps(owner.model_dump(mode="json"), indent=2) + "\n"


def parse_copy_owner(text: str) -> CopyOwner | str:
    """The copy owner record in `text`, or what is wrong with it."""
    try:
        data = json_limits.loads(text)
    except ValueError as error:  # not JSON (JSONDecodeError), or nested too deeply
        return f"not JSON: {error}"
    if not isinstance(data, dict) or data.get("kind") != COPY_OWNER_KIND:
        return f"not a copy's owner record (its kind is not {COPY_OWNER_KIND})"
    try:
        return CopyOwner.model_validate(data)
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        return f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}"


def judge_copy(
    kind: EntryKind,
    uid: int | None,
    mtime: float | None,
    owner: CopyOwner | str,
    *,
    own_uid: int,
    own: ProcessIdentity,
    observation: ProcessObservation | None,
    now: float,
    margin: float = OWNERLESS_MARGIN_SECONDS,
) -> Judgement:
    """Whether a copy's folder is stale (its host is dead), live, or to be left alone: never a
    link or another user's; by its owner record's host as a runtime directory's; without a
    usable owner record, only once older than `margin`."""
    if kind is not EntryKind.DIRECTORY:
        return Judgement(
            verdict=Verdict.LEFT, reason=f"not a directory but a {kind.value}: never followed"
        )
    if uid is None:
        return Judgement(verdict=Verdict.LEFT, reason="it could not be examined")
    if uid != own_uid:
        return Judgement(
            verdict=Verdict.LEFT, reason=f"it belongs to user {uid}, not to user {own_uid}"
        )
    if isinstance(owner, str):
        return judge_ownerless(owner, mtime, now, margin)
    return judge_host(owner.host, own, observation)
