"""A program's session transcript as the host reads it (issue 21 §3): each JSON line told as what
it is — a prompt, a tool call, a call's result — by the program's dialect, which its backend
profile holds (adapters/claude/transcript.py, adapters/pi/transcript.py). The host judges every
call's decision alike whatever the program (application/tracing/calls.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Call", "Prompt", "Result", "TranscriptDialect", "TranscriptEvent"]


@dataclass(frozen=True)
class Prompt:
    """A prompt of the session (a user message that is no tool result): a round begins."""


@dataclass(frozen=True)
class Call:
    """A tool call the model made; its fields as the line gives them (checked where used)."""

    id: object
    name: object
    arguments: object


@dataclass(frozen=True)
class Result:
    """A tool call's result."""

    call_id: object
    is_error: object
    content: object


TranscriptEvent = Prompt | Call | Result


@dataclass(frozen=True)
class TranscriptDialect:
    """How one program writes its session: what each parsed line tells (`events`), the raw
    lines skipped before parsing because they only stream what a later line holds whole
    (`skipped`, prefixes), and the program's own answers to a call the permission rules the
    host generated from the grant deny (`grant_denials`, with the `wrappers` its answer text
    comes in)."""

    events: Callable[[Mapping[str, Any]], Sequence[TranscriptEvent]]
    skipped: tuple[str, ...] = ()
    in_output: bool = True
    """The program's output lines carry its calls in this dialect as they are answered (Claude
    Code's stream-json, pi's json mode), and the events tell them from there; where they do not
    (Codex's `--json` items, which 0.171 does not always print), the calls are told from the
    session's transcript once the round's program has ended."""
    grant_denials: tuple[str, ...] = ()
    wrappers: tuple[str, ...] = ()
