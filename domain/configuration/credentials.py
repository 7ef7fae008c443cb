"""Where the user's credentials really are: the origins of the files the host copies into
`config/`, and the homes (issue 8 §4; seed 000 "Run directory and runtime directory", seed 001
"Only the pi files that say how to reach a provider are copied").

Each backend's profile says where its program keeps them (`CredentialSpec`); one function finds
its configuration directory, used both by the backends (what to copy) and by the preparation
(what to hide, for every registered backend whichever runs), so the file a run copies is always a
file its worker cannot read where it came from:

- Claude Code: `$CLAUDE_CONFIG_DIR/.credentials.json`, else `$HOME/.claude/.credentials.json`;
- pi: `auth.json` and `models.json` of `$PI_CODING_AGENT_DIR` (a leading `~` expanded to HOME, as
  pi 0.73.1 does), else of `$HOME/.pi/agent`;
- the model map: `$CONCORDE_MODEL_MAP`, else `concorde/models.json` of `$XDG_CONFIG_HOME`, else of
  `$HOME/.config` (domain.configuration.machine.model_map_location), read by the host for itself;
- the machine's signing key: `$CONCORDE_SIGNING_KEY`, else `signing-key.pem` beside the model
  map (domain.configuration.signing), with which the host alone signs a run's statement;
- the homes: the password database's home and `$HOME` when it is another absolute path.

Pure: the environment comes in as a Mapping, nothing is resolved here (the caller adds real
paths).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from concorde_workers.domain.configuration.machine import model_map_location
from concorde_workers.domain.configuration.signing import signing_key_location


class CredentialSpec(BaseModel):
    """Where a backend's program keeps the user's credentials, and how a key reaches a round."""

    model_config = ConfigDict(frozen=True)

    directory_variable: str
    """The variable naming the program's configuration directory (`CLAUDE_CONFIG_DIR`)."""
    default_directory: str
    """The directory below HOME without it (`.claude`, `.pi/agent`)."""
    expands_tilde: bool = False
    """The program expands a leading `~` of the variable to HOME (pi 0.73.1 does)."""
    files: tuple[str, ...]
    """The files of that directory a run copies into `config/` (nothing else is read)."""
    hidden_files: tuple[str, ...] = ()
    """Files of that directory no run copies or reads, hidden from every worker at their
    origin all the same (the Codex CLI's auth.json: a login its runs never use)."""
    login_file: str | None
    """The one of `files` whose presence says the user has logged in (doctor); None when the
    backend's runs take no login file (the Codex CLI: its key comes by a variable alone)."""
    key_variables: tuple[str, ...] = ()
    """The variables a key may be given in by name (`ANTHROPIC_API_KEY`)."""
    key_suffix: str | None = None
    """Any variable ending so may give a key (pi: every provider's `*_API_KEY`)."""
    key_text: str
    """The key variables as a person reads them."""
    repair: str
    """How a user gives the program its credentials."""

    def keys_in(self, environ: Mapping[str, str]) -> list[str]:
        """The key variables `environ` sets, by name (never a value)."""
        named = [name for name in self.key_variables if environ.get(name)]
        if self.key_suffix is not None:
            named += sorted(
                name for name, value in environ.items() if name.endswith(self.key_suffix) and value
            )
        return named


def _absolute(value: str | None) -> str | None:
    return posixpath.normpath(value) if value and posixpath.isabs(value) else None


def copied_files(spec: CredentialSpec, environ: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The files a run of the backend copies into `config/`, each as (its origin, its name):
    the one answer `doctor` and `init` say and the backends' `credential_copies` take (none
    without a configuration directory; none for the Codex CLI)."""
    directory = config_directory(spec, environ)
    if directory is None:
        return ()
    return tuple((posixpath.join(directory, name), name) for name in spec.files)


def config_directory(spec: CredentialSpec, environ: Mapping[str, str]) -> str | None:
    """The user's configuration directory of the program as it finds it: its variable (with a
    leading `~` expanded when the program does), else the default below `$HOME`; None when it
    depends on a HOME the host does not have."""
    home = environ.get("HOME") or None
    configured = environ.get(spec.directory_variable)
    if configured:
        if spec.expands_tilde and (configured == "~" or configured.startswith("~/")):
            return None if home is None else home + configured[1:]
        return configured
    return None if home is None else posixpath.join(home, spec.default_directory)


class CredentialOrigins(BaseModel):
    """What a worker may never read where it came from: the homes and configuration directories
    (hidden whole, but the way to what the run keeps, like a home) and the credential files
    (hidden always). Absolute paths as the environment gives them."""

    model_config = ConfigDict(frozen=True)

    homes: tuple[str, ...]
    directories: tuple[str, ...]
    files: tuple[str, ...]


def credential_origins(
    environ: Mapping[str, str], user_home: str, specs: Sequence[CredentialSpec]
) -> CredentialOrigins:
    """Every origin of a credential the host reads or copies, for every registered backend
    (`specs`) whichever runs: a Claude Code worker must not read pi's auth.json either.
    `user_home` is the password database's home; relative values (which would name a place
    relative to the host's working directory) are left out, the host never copies from them into
    a worker's reach."""
    homes = [h for h in (_absolute(user_home), _absolute(environ.get("HOME"))) if h]
    directories: list[str] = []
    files: list[str] = []
    for spec in specs:
        directory = _absolute(config_directory(spec, environ))
        if directory:
            directories.append(directory)
            files += [posixpath.join(directory, name) for name in spec.files + spec.hidden_files]
    model_map = model_map_location(environ, [], {})  # only its path
    if isinstance(model_map, str) and _absolute(model_map):
        files.append(posixpath.normpath(model_map))
    signing_key = _absolute(signing_key_location(environ))  # the host's alone (issue 30 §4)
    if signing_key:
        files.append(signing_key)
    return CredentialOrigins(
        homes=tuple(dict.fromkeys(homes)),
        directories=tuple(dict.fromkeys(directories)),
        files=tuple(dict.fromkeys(files)),
    )


def home_at_root(
    user_home: str, environ: Mapping[str, str], real: Callable[[str], str]
) -> str | None:
    """Why no worker can run under these homes, or None: a home that is `/` (as given, or with
    links resolved by `real`) cannot be hidden — hiding it hides the system the agent runs from,
    leaving it leaves every credential below it readable — so the host refuses before any run
    rather than do either silently (docs/decisions.md "A home of /"). An empty or relative
    `HOME` is no home: the password database's home stands for it (`credential_origins`)."""
    given = environ.get("HOME")
    homes = [
        (
            "the password database's home directory of this user",
            user_home,
            "run the host as a user whose home directory is a folder of its own",
        ),
        (
            "HOME",
            given or "",
            f"set HOME to the user's own home directory, or unset it (then "
            f"{user_home}, the password database's, is hidden)",
        ),
    ]
    for which, home, repair in homes:
        # normpath keeps a leading "//" (POSIX leaves its meaning open): Linux reads it as /
        if (
            home
            and posixpath.isabs(home)
            and "/" in ("/" + posixpath.normpath(home).lstrip("/"), real(home))
        ):
            shown = home if home == "/" else f"{home} (which is /)"
            return (
                f"{which} is {shown}: a home of / cannot be hidden from the worker — hiding "
                f"it would hide the system the agent program runs from, leaving it would "
                f"leave every credential below it readable; {repair}"
            )
    return None


__all__ = [
    "CredentialOrigins",
    "CredentialSpec",
    "config_directory",
    "copied_files",
    "credential_origins",
    "home_at_root",
]
