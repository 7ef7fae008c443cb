"""`concorde-workers install-agents` (issue 12 §2): what installing the pinned agent programs
into the user data folder takes, decided from what is there.

The pins are the package's own package.json and package-lock.json (package data, the same files
./scripts/setup installs from in a checkout). The folder gets both, then `npm ci` installs
exactly the lockfile; a stamp in node_modules (`.concorde-lock`, the lockfile's sha256, as
./scripts/setup writes) says which lockfile is installed, so a second call with the same pins
does nothing.
"""

from __future__ import annotations

import hashlib
import posixpath
from dataclasses import dataclass, field

LOCK_STAMP = ".concorde-lock"
NPM_CI: tuple[str, ...] = ("ci", "--no-audit", "--no-fund", "--loglevel=error")


def lock_stamp(lock_text: str) -> str:
    """The installed lockfile's mark: its sha256 (`sha256sum package-lock.json`)."""
    return hashlib.sha256(lock_text.encode("utf-8")).hexdigest()


def stamp_path(folder: str) -> str:
    return posixpath.join(folder, "node_modules", LOCK_STAMP)


@dataclass(frozen=True)
class InstallPlan:
    """The files to write into `folder`, the command to run there, and whether anything is to
    be done at all (the stamp already names these pins: nothing)."""

    folder: str
    needed: bool
    stamp: str
    files: dict[str, str] = field(default_factory=dict)
    argv: tuple[str, ...] = ()


def install_plan(
    folder: str, package_json: str, lock: str, npm: str, installed_stamp: str | None
) -> InstallPlan:
    stamp = lock_stamp(lock)
    if installed_stamp is not None and installed_stamp.strip() == stamp:
        return InstallPlan(folder=folder, needed=False, stamp=stamp)
    return InstallPlan(
        folder=folder,
        needed=True,
        stamp=stamp,
        files={
            posixpath.join(folder, "package.json"): package_json,
            posixpath.join(folder, "package-lock.json"): lock,
        },
        argv=(npm, *NPM_CI),
    )
