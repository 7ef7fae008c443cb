"""Transient model-service errors, as a table of the texts both agent programs really print, and the
delay before a retry round.

Seed 000 "Retries": an error the agent program reports for its model call is transient when it
names one of four causes (a rate or concurrency limit, an overloaded service, an explicit request
to retry or try again later, a lost call), and never when it names an exhausted quota, billing or
a usage limit, which waiting does not lift. Everything else ends the run at once.

`ERROR_TEXTS` is that rule as data: each row names what it recognises, its pattern, its cause
(None: never transient) and the real texts it was made from with where they are printed (Claude
Code 2.1.197's bundle, captures of Claude Code 2.1.197 and 2.1.332, pi 0.73.1's dist and the SDKs
it uses, captures of real runs against the scripted servers: notes/claude-code.md §8,
notes/pi.md §8, docs/decisions.md "Claude Code 2.1.332", tests/e2e). The never-transient rows
come first, so a text naming a quota is never retried whatever else it says; after them the first
row that matches decides; a text no row matches is not transient. The tests take every row's texts
as their cases.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum


class TransientCause(StrEnum):
    """The four families of seed 000 "Retries", in the spec's order."""

    RATE_LIMIT = "rate limit"
    OVERLOADED = "overloaded"
    RETRY_LATER = "retry later"
    LOST_CALL = "lost call"


@dataclass(frozen=True)
class ErrorRow:
    """One row of the table: what it recognises, its pattern, the cause it gives (None: never
    transient), and the real texts it was made from with their source."""

    recognises: str
    pattern: re.Pattern[str]
    cause: TransientCause | None
    texts: tuple[str, ...]
    source: str

    @property
    def never(self) -> bool:
        return self.cause is None


def _status(*codes: int) -> str:
    """An HTTP status as a number of its own: not part of a longer number, a version, an address
    or a port; a colon may follow it (`Error 429: {...}`, `API Error: 500: ...`)."""
    alternatives = "|".join(str(c) for c in codes)
    return rf"(?<![\w.:/-])(?:{alternatives})(?![\w/-]|[.:]\d)"


def _row(
    recognises: str, pattern: str, cause: TransientCause | None, source: str, *texts: str
) -> ErrorRow:
    return ErrorRow(recognises, re.compile(pattern, re.IGNORECASE), cause, texts, source)


_CLAUDE = "Claude Code 2.1.197 (bundle: the API error texts of its result envelope)"
_CLAUDE_RUN = "Claude Code 2.1.197, captured against the scripted Messages API"
_CLAUDE_332 = "Claude Code 2.1.332, captured against the scripted Messages API"
_PI = "pi 0.73.1 (pi-ai providers: `<status> <message>` of the OpenAI SDK, `Error Code ...`)"
_PI_RUN = "pi 0.73.1, captured against the scripted OpenAI-compatible server"
_GATEWAY = "a model gateway's text, as both programs pass it on"
_CODEX_RUN = (
    "Codex CLI 0.171.0, captured against the scripted Responses API server with its own retries "
    "off (`turn.failed.error.message`; ../shared/notes/codex.md §5)"
)

# Codes of a connection that was refused, reset, closed or lost, or timed out, or a name lookup
# that failed for now (EAI_AGAIN); not ENOTFOUND, ENETUNREACH, EHOSTUNREACH, FailedToOpenSocket or
# a certificate error, which name a wrong address or a broken setup (docs/decisions.md).
_LOST_CODES = (
    "ECONNREFUSED|ConnectionRefused|ECONNRESET|ECONNABORTED|EPIPE|ConnectionClosed"
    "|StreamSuspended|ETIMEDOUT|EAI_AGAIN"
)

ERROR_TEXTS: tuple[ErrorRow, ...] = (
    # --- never transient: waiting does not lift them -----------------------------------------
    _row(
        "an exhausted quota",
        r"quota",
        None,
        _PI,
        "429 You exceeded your current quota, please check your plan and billing details. For "
        "more information on this error, read the docs: "
        "https://platform.openai.com/docs/guides/error-codes/api-errors.",
        "Error Code insufficient_quota: You exceeded your current quota, please check your plan "
        "and billing details.",
        "insufficient_quota",
    ),
    _row(
        "billing, credits or a spend limit",
        r"billing|credit balance|insufficient[ _](?:credit|balance|funds)|payment required"
        r"|out of (?:usage )?credits|out of usage|add funds|spend limit|usage credits? "
        r"(?:are |is )?required|requires usage credits|" + _status(402),
        None,
        _CLAUDE,
        "Credit balance is too low",
        "API Error: 400 Your credit balance is too low to access the Anthropic API. Please go to "
        "Plans & Billing to upgrade or purchase credits.",
        "You're out of usage credits · resets Jan 1, 12am (UTC)",
        "Your org is out of usage · add funds to continue",
        "You've hit your org's monthly spend limit · run /usage-credits to raise it",
        "API Error: Usage credits required for 1M context · run /usage-credits to turn them on, "
        "or /model to switch to standard context",
        "Mistral API error (402): Payment Required",
    ),
    _row(
        "a usage limit",
        r"(?<!not your )\busage[ _-]?limits?\b|usage_limit|usage_not_included"
        r"|\b(?:session|daily|weekly|monthly|5-hour|Opus|Sonnet|Fable 5) limit\b"
        r"|hit your (?:[\w']+ )*?limit|reached your (?:specified )?(?:API )?usage limits?",
        None,
        _CLAUDE,
        "You've hit your session limit · resets 3pm (Europe/Berlin)",
        "You've hit your weekly limit · resets Mon 9am (UTC)",
        "You've hit your limit · resets 5am (UTC)",
        "Claude AI usage limit reached|1767225600",
        "You have reached your specified API usage limits. You will regain access on "
        "2026-01-01 at 00:00 UTC.",
        "You have hit your ChatGPT usage limit (plus plan). Try again in ~158 min.",
        "Rate limit: monthly usage_limit exceeded",
    ),
    _row(
        "a sandbox the settings require and cannot have (not the model call)",
        r"sandbox required but unavailable",
        None,
        _CLAUDE_RUN,
        "Sandbox required but unavailable: sandbox is enabled but dependencies are missing: "
        "bubblewrap (bwrap) not installed, socat not installed · install missing tools (e.g. "
        "apt install bubblewrap socat) or see https://code.claude.com/docs/en/sandboxing. Set "
        "sandbox.failIfUnavailable=false to allow unsandboxed execution.",
    ),
    # --- a rate or concurrency limit, too many requests, the HTTP status 429 ----------------
    _row(
        "a rate or concurrency limit, too many requests",
        r"\brate[ _-]?limit|\bconcurren(?:cy|t)[ _-]?(?:requests?[ _-]?)?limit"
        r"|too many (?:concurrent |parallel |simultaneous )?requests"
        r"|temporarily limiting requests|request rejected \(429\)",
        TransientCause.RATE_LIMIT,
        _CLAUDE_RUN
        + "; "
        + _CLAUDE_332
        + "; "
        + _PI_RUN
        + "; "
        + _GATEWAY
        + " (issue 19 §3: vLLM, LiteLLM and company gateways); "
        + _CODEX_RUN,
        "too many concurrent requests",
        "Concurrent request limit exceeded",
        "Error: concurrent requests limit reached for this key",
        "API Error: Request rejected (429) · Number of request tokens has exceeded your "
        "per-minute rate limit",
        "API Error: Server is temporarily limiting requests (not your usage limit) · Rate limited",
        "429 Rate limit reached for requests",
        "529 Concurrency limit exceeded for this gateway, please retry later",
        "Error Code rate_limit_exceeded: Rate limit reached for gpt-4o in organization org-x on "
        "tokens per min (TPM): Limit 30000, Used 29000, Requested 2000.",
        "Too Many Requests",
        "exceeded retry limit, last status: 429 Too Many Requests",
    ),
    _row(
        "the HTTP status 429",
        _status(429),
        TransientCause.RATE_LIMIT,
        _GATEWAY,
        'Error 429: {"error":{"message":"slow down"}}',
        "HTTP 429: please slow down",
        'Mistral API error (429): {"object":"error","message":"Requests limited"}',
    ),
    # --- an overloaded service, high demand, 500/502/503/504/529, unavailable for now --------
    _row(
        "an overloaded service, one at capacity, busy or under high demand or load",
        r"overloaded|high demand|at capacity|(?:high|heavy) load"
        r"|\b(?:server|service|system|model|backend|api|gateway)(?: is)? (?:too )?busy\b",
        TransientCause.OVERLOADED,
        _CLAUDE_RUN + "; " + _CLAUDE_332 + "; " + _PI_RUN + "; " + _GATEWAY + "; " + _CODEX_RUN,
        "API Error: 529 Overloaded. This is a server-side issue, usually temporary — try again "
        "in a moment. If it persists, check your inference gateway (127.0.0.1:41235).",
        "API Error: Repeated 529 Overloaded errors. The API is at capacity — this is usually "
        "temporary. Try again in a moment. If it persists, check your inference gateway (...).",
        "529 Overloaded",
        "Opus is experiencing high load, please use /model to switch to Sonnet",
        "The service is under high demand right now",
        "The server is busy",
        "Server busy, try later",
        "The system is experiencing heavy load",
        "We\u2019re currently experiencing high demand, which may cause temporary errors.",
    ),
    _row(
        "the HTTP status 500, 502, 503, 504 or 529",
        _status(500, 502, 503, 504, 529),
        TransientCause.OVERLOADED,
        _CLAUDE_RUN
        + "; "
        + _CLAUDE_332
        + "; "
        + _PI
        + "; "
        + _GATEWAY
        + " (`API Error: 500 terminated`: "
        "github.com/ding113/claude-code-hub/issues/307)",
        "API Error: 500 Internal server error. This is a server-side issue, usually temporary — "
        "try again in a moment. If it persists, check your inference gateway (...).",
        "API Error: 500: internal server error",
        "API Error: 500 terminated",
        'HTTP 529: {"type":"error","error":{"type":"api_error"}}',
        "502 status code (no body)",
        "504 Gateway Timeout",
    ),
    _row(
        "a service unavailable for now, a server error",
        r"service[ _-]?unavailable|temporarily unavailable|unavailable for now"
        r"|\bserver[ _-]error|internal[ _-]server[ _-]error",
        TransientCause.OVERLOADED,
        _PI + "; " + _GATEWAY,
        "Service Unavailable",
        "model temporarily unavailable",
        "Error Code server_error: The server had an error while processing your request. Sorry "
        "about that!",
    ),
    # --- an explicit request to retry or try again later -------------------------------------
    _row(
        "an explicit request to retry or try again",
        r"(?<!not )(?<!never )(?<!n't )\bretry (?:later|again|in a|in \d|after|shortly|soon"
        r"|your request|the request"
        r"|this request)|\b(?:please|you (?:can|may|should)|can|may) retry\b"
        r"|\bshould be retried\b|\btry (?:again|later)\b",
        TransientCause.RETRY_LATER,
        _CLAUDE + "; " + _CLAUDE_332 + " (a connection the server "
        "closed before answering); " + _GATEWAY,
        "Authentication error · This may be a temporary network issue, please try again",
        "API Error: Connection dropped (ECONNRESET). Check the gateway set in "
        "ANTHROPIC_BASE_URL, then try again.",
        "API Error: Connection to the API was lost (ECONNRESET). This is usually temporary — "
        "try again.",
        "API Error: Connection closed while thinking, before producing a response. Try again.",
        "Please retry later.",
        "Something went wrong, try again later",
        "An error occurred, please retry",
        "You can retry this request",
        "The request should be retried",
    ),
    # --- a lost call: an upstream or stream failure, a connection reset/refused/lost, a timeout
    _row(
        "a connection refused, reset, closed or lost",
        rf"connection[ _-]?(?:(?:was|has been|got) )?(?:reset|refused|lost|closed|aborted"
        rf"|error|dropped)|\blost (?:the |its |your )?connection"
        rf"|unable to connect to API \((?:{_LOST_CODES})\)"
        rf"|unable to connect to API\. Check your internet connection"
        rf"|\b(?:{_LOST_CODES})\b|socket hang up|other side closed|closed unexpectedly"
        rf"|fetch failed|network[ _-]?error|\bupstream\b|connection failed",
        TransientCause.LOST_CALL,
        _CLAUDE_RUN + "; " + _CLAUDE_332 + " (a port nothing listens "
        "on); " + _PI_RUN + "; " + _CLAUDE + "; " + _CODEX_RUN,
        "API Error: Unable to connect to API (ConnectionRefused)",
        "API Error: Connection refused — a firewall or proxy may be blocking it (ECONNREFUSED)",
        "API Error: Unable to connect to API (ECONNRESET)",
        "API Error: Unable to connect to API. Check your internet connection",
        "API Error: Connection closed mid-response. The response above may be incomplete.",
        "Connection error.",
        "Connection was lost",
        "lost connection to server",
        "The connection has been reset by the peer",
        "other side closed",
        "fetch failed",
        "socket hang up",
        "Provider finish_reason: network_error",
        "upstream connect error or disconnect/reset before headers. reset reason: connection "
        "termination",
        "Connection failed: error sending request",
    ),
    _row(
        "a stream that failed, stalled or ended early",
        r"\bstream (?:error|failure|failed|ended|closed|interrupted|disconnected|stalled)"
        r"|\bstalled\b|stream idle timeout|ended without",
        TransientCause.LOST_CALL,
        _CLAUDE + "; " + _CODEX_RUN,
        "API Error: Response stalled mid-stream. The response above may be incomplete.",
        "API Error: Stream idle timeout - no chunks received",
        "stream error: received RST_STREAM",
        "stream disconnected before completion: stream closed before response.completed",
        "stream disconnected before completion: idle timeout waiting for SSE",
    ),
    _row(
        "a call that timed out",
        r"timed[ _-]?out|\btimeout\b",
        TransientCause.LOST_CALL,
        _CLAUDE + "; " + _PI,
        "Request timed out.",
        "API Error: Request timed out. Check your internet connection and proxy settings",
    ),
    _row(
        "a call terminated on its way (the fetch's own word for a body cut off)",
        r"(?:^|: |\b\d{3} )terminated\b(?! by)",
        TransientCause.LOST_CALL,
        _PI_RUN,
        "terminated",
        "API Error: terminated",
    ),
)
"""The table, in the order it is tried: never-transient rows first, then the spec's causes."""


def deciding_row(text: str) -> ErrorRow | None:
    """The row that decides `text`: the first never-transient row that matches, else the first
    row that matches; None when no row does (then the text is not transient)."""
    for row in ERROR_TEXTS:
        if row.pattern.search(text):
            return row
    return None


def transient_cause(text: str) -> TransientCause | None:
    """The family of transient model-service error `text` names, or None when it is not one.

    An error naming an exhausted quota, billing or a usage limit is never transient."""
    row = deciding_row(text)
    return None if row is None else row.cause


def transient_cause_of(texts: Iterable[str]) -> TransientCause | None:
    """The cause of a round's error given as several texts (Claude Code's final text and the
    errors its envelope lists): None when any is never transient, else the first text's cause
    that has one."""
    rows = [deciding_row(t) for t in texts]
    if any(row is not None and row.never for row in rows):
        return None
    return next((row.cause for row in rows if row is not None and row.cause is not None), None)


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
