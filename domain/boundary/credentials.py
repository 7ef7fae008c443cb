"""Where the user's credentials really are: the origins of the files the host copies into
`config/`, and the homes (issue 8 §4; seed 000 "Run directory and runtime directory", seed 001
"Only the pi files that say how to reach a provider are copied").

One function per origin, used both by the backends (what to copy) and by the preparation (what to
hide), so the file a run copies is always a file its worker cannot read where it came from:

- Claude Code: `$CLAUDE_CONFIG_DIR/.credentials.json`, else `$HOME/.claude/.credentials.json`;
- pi: `auth.json` and `models.json` of `$PI_CODING_AGENT_DIR` (a leading `~` expanded to HOME, as
  pi 0.73.1 does), else of `$HOME/.pi/agent`;
- the model map: `$CONCORDE_MODEL_MAP`, else `concorde/models.json` of `$XDG_CONFIG_HOME`, else of
  `$HOME/.config` (domain.configuration.machine.model_map_location), read by the host for itself;
- the homes: the password database's home and `$HOME` when it is another absolute path.

Pure: the environment comes in as a Mapping, nothing is resolved here (the caller adds real
paths).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping

from pydantic import BaseModel, ConfigDict

from concorde_workers.domain.configuration.machine import model_map_location
from concorde_workers.domain.evidence.layout import (
    CLAUDE_CREDENTIALS_FILE,
    PI_AUTH_FILE,
    PI_MODELS_FILE,
)


def _absolute(value: str | None) -> str | None:
    return posixpath.normpath(value) if value and posixpath.isabs(value) else None


def claude_config_directory(environ: Mapping[str, str]) -> str | None:
    """The user's Claude Code configuration directory: `CLAUDE_CONFIG_DIR`, else
    `$HOME/.claude`; None when neither is set."""
    configured = environ.get("CLAUDE_CONFIG_DIR")
    if configured:
        return configured
    home = environ.get("HOME")
    return posixpath.join(home, ".claude") if home else None


def pi_agent_directory(environ: Mapping[str, str]) -> str | None:
    """The user's pi configuration directory as pi 0.73.1 finds it (config.js getAgentDir):
    `PI_CODING_AGENT_DIR` (`~` or a leading `~/` expanded to HOME), else `$HOME/.pi/agent`;
    None when it depends on a HOME the host does not have."""
    home = environ.get("HOME") or None
    configured = environ.get("PI_CODING_AGENT_DIR")
    if configured:
        if configured == "~" or configured.startswith("~/"):
            return None if home is None else home + configured[1:]
        return configured
    return None if home is None else posixpath.join(home, ".pi", "agent")


class CredentialOrigins(BaseModel):
    """What a worker may never read where it came from: the homes and configuration directories
    (hidden whole, but the way to what the run keeps, like a home) and the credential files
    (hidden always). Absolute paths as the environment gives them."""

    model_config = ConfigDict(frozen=True)

    homes: tuple[str, ...]
    directories: tuple[str, ...]
    files: tuple[str, ...]


def credential_origins(environ: Mapping[str, str], user_home: str) -> CredentialOrigins:
    """Every origin of a credential the host reads or copies, for both backends whichever runs:
    a Claude Code worker must not read pi's auth.json either. `user_home` is the password
    database's home; relative values (which would name a place relative to the host's working
    directory) are left out, the host never copies from them into a worker's reach."""
    homes = [h for h in (_absolute(user_home), _absolute(environ.get("HOME"))) if h]
    claude = _absolute(claude_config_directory(environ))
    pi = _absolute(pi_agent_directory(environ))
    files: list[str] = []
    if claude:
        files.append(posixpath.join(claude, CLAUDE_CREDENTIALS_FILE))
    if pi:
        files += [posixpath.join(pi, PI_AUTH_FILE), posixpath.join(pi, PI_MODELS_FILE)]
    model_map = model_map_location(environ, [])
    if isinstance(model_map, str) and _absolute(model_map):
        files.append(posixpath.normpath(model_map))
    return CredentialOrigins(
        homes=tuple(dict.fromkeys(homes)),
        directories=tuple(dict.fromkeys(d for d in (claude, pi) if d)),
        files=tuple(dict.fromkeys(files)),
    )


def home_at_root(user_home: str, environ: Mapping[str, str],
                 real: Callable[[str], str]) -> str | None:
    """Why no worker can run under these homes, or None: a home that is `/` (as given, or with
    links resolved by `real`) cannot be hidden — hiding it hides the system the agent runs from,
    leaving it leaves every credential below it readable — so the host refuses before any run
    rather than do either silently (docs/decisions.md "A home of /"). An empty or relative
    `HOME` is no home: the password database's home stands for it (`credential_origins`)."""
    given = environ.get("HOME")
    homes = [("the password database's home directory of this user", user_home,
              "run the host as a user whose home directory is a folder of its own"),
             ("HOME", given or "",
              f"set HOME to the user's own home directory, or unset it (then "
              f"{user_home}, the password database's, is hidden)")]
    for which, home, repair in homes:
        # normpath keeps a leading "//" (POSIX leaves its meaning open): Linux reads it as /
        if home and posixpath.isabs(home) and "/" in (
                "/" + posixpath.normpath(home).lstrip("/"), real(home)):
            shown = home if home == "/" else f"{home} (which is /)"
            return (f"{which} is {shown}: a home of / cannot be hidden from the worker — hiding "
                    f"it would hide the system the agent program runs from, leaving it would "
                    f"leave every credential below it readable; {repair}")
    return None


__all__ = ["CredentialOrigins", "claude_config_directory", "credential_origins",
           "home_at_root", "pi_agent_directory"]
