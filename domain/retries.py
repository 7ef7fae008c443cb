"""Transient model-service errors and the delay before a retry round.

Seed 000 "Retries". An error message is transient when it names one of four causes (rate limit,
overloaded service, an explicit request to retry later, a lost call) and names no exhausted quota,
billing or usage limit, which waiting does not lift; that exclusion is checked first. The texts
are those both programs really print (notes/claude-code.md §8, notes/pi.md §8).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from enum import StrEnum


class TransientCause(StrEnum):
    """The four families of seed 000 "Retries", in the spec's order."""

    RATE_LIMIT = "rate limit"
    OVERLOADED = "overloaded"
    RETRY_LATER = "retry later"
    LOST_CALL = "lost call"


def _status(*codes: int) -> str:
    """An HTTP status as a number of its own: not part of a longer number, an address or a port."""
    alternatives = "|".join(str(c) for c in codes)
    return rf"(?<![\w.:/-])(?:{alternatives})(?![\w:/-]|\.\d)"


_NEVER_TRANSIENT = re.compile(
    r"quota|billing|credit balance|insufficient[ _](?:credit|balance|funds)|payment required"
    r"|\busage[ _-]?limit|\b(?:session|daily|weekly|monthly|5-hour) limit\b|hit your limit",
    re.IGNORECASE,
)

_FAMILIES: tuple[tuple[TransientCause, re.Pattern[str]], ...] = (
    (TransientCause.RATE_LIMIT, re.compile(
        rf"\brate[ _-]?limit|\bconcurrency[ _-]?limit|too many requests|{_status(429)}",
        re.IGNORECASE,
    )),
    (TransientCause.OVERLOADED, re.compile(
        rf"overloaded|high demand|at capacity|\bunavailable\b|{_status(500, 502, 503, 504, 529)}",
        re.IGNORECASE,
    )),
    (TransientCause.RETRY_LATER, re.compile(
        r"\bretry (?:later|again|in a|in \d|after|shortly|soon)|\btry again\b",
        re.IGNORECASE,
    )),
    (TransientCause.LOST_CALL, re.compile(
        r"\bupstream|\bstream (?:error|failure|failed|ended|closed|interrupted|disconnected)"
        r"|connection[ _-]?(?:reset|refused|lost|closed|aborted|error)|\bECONN(?:RESET|REFUSED)"
        r"|unable to connect|socket hang up|network[ _-]?error|fetch failed"
        r"|timed[ _-]?out|\btimeout\b|\bETIMEDOUT\b",
        re.IGNORECASE,
    )),
)


def transient_cause(text: str) -> TransientCause | None:
    """The family of transient model-service error `text` names, or None when it is not one.

    An error naming an exhausted quota, billing or a usage limit is never transient. When a text
    names several families, the first in the spec's order is returned.
    """
    if _NEVER_TRANSIENT.search(text):
        return None
    for cause, pattern in _FAMILIES:
        if pattern.search(text):
            return cause
    return None


def transient_cause_of(texts: Iterable[str]) -> TransientCause | None:
    """The cause of a round's error given as several texts (Claude Code's final text and the
    errors its envelope lists): None when any names a quota, billing or usage limit, else the
    first text's cause that has one."""
    texts = tuple(texts)
    if any(_NEVER_TRANSIENT.search(t) for t in texts):
        return None
    for text in texts:
        cause = transient_cause(text)
        if cause is not None:
            return cause
    return None


RETRY_FACTOR_LOW = 0.5
RETRY_FACTOR_HIGH = 1.0


def retry_delay(base_seconds: float, k: int, factor: float) -> float:
    """Seconds to wait before the k-th retry round: base × 2^(k−1) × factor.

    `factor` is drawn by the caller's Random port, `Random.uniform(0.5, 1.0)`.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"the retry round number k must be an integer of at least 1, not {k!r}")
    if not RETRY_FACTOR_LOW <= factor <= RETRY_FACTOR_HIGH:
        raise ValueError(f"the random factor must lie between 0.5 and 1, not {factor!r}")
    if not math.isfinite(base_seconds) or base_seconds < 0:
        raise ValueError(f"the retry delay must be finite and at least 0, not {base_seconds!r}")
    return float(base_seconds) * 2.0 ** (k - 1) * factor
