"""`show RUN_DIR --diff [--round N]` (issue 21 §2): each round's changes.patch, coloured on a
terminal, plain when piped; every control character of worker content made visible, as in
every account (domain/ground/text.py), a tab kept as it is."""

from __future__ import annotations

from collections.abc import Sequence

from concorde_workers.domain.ground.text import escape_controls

__all__ = ["patch_text"]

_RESET = "\x1b[0m"
_COLOURS = (
    ("diff --git ", "\x1b[1m"),
    ("index ", "\x1b[1m"),
    ("--- ", "\x1b[1m"),
    ("+++ ", "\x1b[1m"),
    ("@@", "\x1b[36m"),
    ("+", "\x1b[32m"),
    ("-", "\x1b[31m"),
    ("#", "\x1b[33m"),
)


def _line(line: str, colour: bool) -> str:
    shown = "\t".join(escape_controls(part) for part in line.split("\t"))
    if not colour:
        return shown
    for start, code in _COLOURS:
        if line.startswith(start):
            return f"{code}{shown}{_RESET}"
    return shown


def patch_text(patches: Sequence[tuple[int, str | None]], colour: bool) -> str:
    """The patches of the rounds asked for, each under a line naming its round; a round that
    kept none said so."""
    out: list[str] = []
    for number, patch in patches:
        title = f"round {number}"
        out.append(f"\x1b[1;7m {title} {_RESET}" if colour else f"=== {title} ===")
        if patch is None:
            out.append("(this round kept no patch)")
            continue
        out.extend(_line(line, colour) for line in patch.split("\n")[:-1] or [patch])
    return "".join(line + "\n" for line in out)
