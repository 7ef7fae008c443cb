"""Seed 000 "Retries": which model-service errors are transient, and the delay before a retry."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from concorde_workers.domain.run.retries import (
    ERROR_TEXTS,
    ErrorRow,
    TransientCause,
    deciding_row,
    retry_delay,
    transient_cause,
    transient_cause_of,
)

RATE, OVERLOADED, LATER, LOST = (
    TransientCause.RATE_LIMIT,
    TransientCause.OVERLOADED,
    TransientCause.RETRY_LATER,
    TransientCause.LOST_CALL,
)

# The texts Claude Code 2.1.197 and 2.1.332 and pi 0.73.1 really print (notes/claude-code.md §8,
# notes/pi.md §8 "Model-service errors", docs/decisions.md "Claude Code 2.1.332"), then the spec's
# own words.
REAL_TEXTS: list[tuple[str, TransientCause | None]] = [
    (
        "API Error: 529 Overloaded. This is a server-side issue, usually temporary — try again in a "
        "moment. If it persists, check your inference gateway (127.0.0.1:41235).",
        OVERLOADED,
    ),
    (
        "API Error: 529 Overloaded. This is a server-side issue, usually temporary — try again in a "
        "moment. If it persists, check https://status.claude.com.",
        OVERLOADED,
    ),
    (
        "API Error: Repeated 529 Overloaded errors. The API is at capacity — this is usually "
        "temporary. Try again in a moment. If it persists, check your inference gateway (...).",
        OVERLOADED,
    ),
    (
        "API Error: Request rejected (429) · This request would exceed your account's rate limit.",
        RATE,
    ),
    ("API Error: Request rejected (429) · fake rate limited", RATE),
    (
        "API Error: 500 Internal server error. This is a server-side issue, usually temporary — try "
        "again in a moment.",
        OVERLOADED,
    ),
    ("API Error: 400 fake bad request", None),
    ("API Error: Unable to connect to API (ConnectionRefused)", LOST),
    ("API Error: Connection refused — a firewall or proxy may be blocking it (ECONNREFUSED)", LOST),
    (
        "API Error: Connection dropped (ECONNRESET). Check the gateway set in ANTHROPIC_BASE_URL, "
        "then try again.",
        LATER,
    ),
    ("429 Rate limit reached for requests", RATE),
    ("503 Service Unavailable", OVERLOADED),
    ("529 Overloaded", OVERLOADED),
    ("529 Concurrency limit exceeded for this gateway, please retry later", RATE),
    ("Provider finish_reason: network_error", LOST),
    ("400 Invalid request: bad parameter", None),
]

SPEC_WORDS: list[tuple[str, TransientCause | None]] = [
    ("Too Many Requests", RATE),
    ("rate_limit_error: Number of concurrent connections has exceeded your rate limit", RATE),
    ("502 Bad Gateway", OVERLOADED),
    ("504 Gateway Timeout", OVERLOADED),
    ("The service is under high demand right now", OVERLOADED),
    ("model temporarily unavailable", OVERLOADED),
    ("Please retry later.", LATER),
    ("Something went wrong, try again later", LATER),
    ("upstream connect error or disconnect/reset before headers", LOST),
    ("stream error: received RST_STREAM", LOST),
    ("read ECONNRESET", LOST),
    ("connection reset by peer", LOST),
    ("Connection lost while streaming", LOST),
    ("Request timed out.", LOST),
    ("fetch failed", LOST),
]

NEVER_TRANSIENT: list[str] = [
    "429 You exceeded your current quota, please check your plan and billing details.",
    "insufficient_quota",
    "API Error: 400 Your credit balance is too low to access the Anthropic API.",
    "Claude AI usage limit reached|1767225600",
    "You've hit your usage limit. Try again later.",
    "503 billing service: payment required, retry later",
    "Rate limit: monthly usage_limit exceeded",
]

NOT_TRANSIENT: list[str] = [
    "API Error: 400 fake bad request",
    "401 Unauthorized: invalid x-api-key",
    "404 model not found",
    "error on port 15030",
    "listening on 127.0.0.1:5003 failed: permission denied",
    "invalid request id 4290",
    "1429 items, 5290 bytes, version 2.500.1",
    "retry count must be positive",
    "Do not retry this request: the input is invalid",
    "You cannot retry a finished job",
    "Maximum retries exceeded",
    "the disk is busy",  # not the service
    "",
]


ROW_TEXTS = [
    pytest.param(row, text, id=f"{row.recognises[:40]}: {text[:50]}")
    for row in ERROR_TEXTS
    for text in row.texts
]


@pytest.mark.req("A transient model-service error is retried")
@pytest.mark.req("Any other error ends the run at once")
@pytest.mark.parametrize(("row", "text"), ROW_TEXTS)
def test_each_real_text_is_decided_by_its_row(row: ErrorRow, text: str) -> None:
    assert deciding_row(text) is row
    assert transient_cause(text) is row.cause


def test_every_row_has_real_texts_and_says_where_they_are_printed() -> None:
    for row in ERROR_TEXTS:
        assert row.texts and row.source, row.recognises
    never = [row.never for row in ERROR_TEXTS]
    # the quota, billing and usage rows come first: nothing a later row matches can undo them
    assert never == sorted(never, reverse=True)
    assert {row.cause for row in ERROR_TEXTS} == {None, *TransientCause}


# Texts the programs really print that name none of the four causes: the run ends at once.
# Claude Code 2.1.197's bundle (its API error texts) and a run without bwrap (the sandbox its
# settings require: sandbox.failIfUnavailable, our own fail-closed setting), Claude Code 2.1.332
# against the scripted Messages API (a 401, a 413: after its own 400 recoveries a 400 still ends
# `API Error: 400 fake bad request`), pi 0.73.1's SDKs, Codex CLI 0.171.0.
REAL_NOT_TRANSIENT: list[str] = [
    "Sandbox required but unavailable: sandbox is enabled but dependencies are missing: "
    "bubblewrap (bwrap) not installed, socat not installed · install missing tools (e.g. apt "
    "install bubblewrap socat) or see https://code.claude.com/docs/en/sandboxing. Set "
    "sandbox.failIfUnavailable=false to allow unsandboxed execution.",
    "Sandbox required but unavailable: the sandbox is unavailable on this platform",
    "API Error: Unable to connect to API: SSL certificate verification failed. Check your proxy "
    "or corporate SSL certificates",
    "API Error: Unable to connect to API (ENOTFOUND)",
    "API Error: Unable to connect to API (FailedToOpenSocket)",
    "API Error: Claude's response exceeded the 32000 output token maximum. To configure this "
    "behavior, set the CLAUDE_CODE_MAX_OUTPUT_TOKENS environment variable.",
    "API Error: The model has reached its context window limit.",
    "API Error: Request was aborted.",
    "API Error: 400 due to tool use concurrency issues.",
    "API Error: 401 Invalid API key · Please run /login",
    "Please run /login · API Error: 403 OAuth token has been revoked",
    "Invalid API key · Fix external API key",
    "Request too large (max 32MB). Accumulated images and attachments in the conversation pushed "
    "the request over the limit. Remove older images or compact the conversation.",
    "API Error: 400 fake bad request",
    "Prompt is too long",
    "400 Invalid request: bad parameter",
    "Request was aborted",
    "No API key for provider: scripted",
    # Codex CLI 0.171.0 against the scripted Responses API server (a 401, a 400: the body).
    "unexpected status 401 Unauthorized: Incorrect API key provided, url: "
    "http://127.0.0.1:37937/v1/responses",
    '{"error": {"message": "bad request body", "type": "scripted_error", "code": null}}',
]


@pytest.mark.req("Any other error ends the run at once")
@pytest.mark.parametrize("text", REAL_NOT_TRANSIENT)
def test_real_errors_naming_no_transient_cause_end_the_run(text: str) -> None:
    assert transient_cause(text) is None


@pytest.mark.req("Any other error ends the run at once")
def test_a_fail_closed_sandbox_beside_an_api_error_is_not_retried() -> None:
    sandbox = REAL_NOT_TRANSIENT[0]
    assert transient_cause_of([sandbox]) is None
    assert transient_cause_of(["API Error: 529 Overloaded", sandbox]) is None


@pytest.mark.req("A transient model-service error is retried")
@pytest.mark.parametrize(
    ("text", "cause"), REAL_TEXTS + SPEC_WORDS, ids=[t[:60] for t, _ in REAL_TEXTS + SPEC_WORDS]
)
def test_transient_errors_are_recognised(text: str, cause: TransientCause | None) -> None:
    assert transient_cause(text) == cause


@pytest.mark.req("Any other error ends the run at once")
@pytest.mark.parametrize("text", NEVER_TRANSIENT)
def test_quota_billing_and_usage_limits_are_never_transient(text: str) -> None:
    assert transient_cause(text) is None


@pytest.mark.req("Any other error ends the run at once")
@pytest.mark.parametrize("text", NOT_TRANSIENT)
def test_other_errors_are_not_transient(text: str) -> None:
    assert transient_cause(text) is None


def test_several_texts_of_one_envelope() -> None:
    assert transient_cause_of(["API Error: Request rejected (429) · slow down", "x"]) is RATE
    assert transient_cause_of(["nothing", "503 Service Unavailable"]) is OVERLOADED
    assert transient_cause_of(["API Error: Request rejected (429)", "quota exhausted"]) is None
    assert transient_cause_of([]) is None


@pytest.mark.req("Retries wait longer each time")
def test_the_defaults_wait_at_most_15_30_60_120_240() -> None:
    assert [retry_delay(15, k, 1.0) for k in range(1, 6)] == [15, 30, 60, 120, 240]
    assert [retry_delay(15, k, 0.5) for k in range(1, 6)] == [7.5, 15, 30, 60, 120]


@pytest.mark.req("Retries wait longer each time")
@given(
    base=st.floats(min_value=0, max_value=3600, allow_nan=False),
    k=st.integers(min_value=1, max_value=20),
    factor=st.floats(min_value=0.5, max_value=1.0),
)
def test_the_delay_lies_between_half_and_the_whole_doubled_delay(
    base: float,
    k: int,
    factor: float,
) -> None:
    delay = retry_delay(base, k, factor)
    full = base * 2 ** (k - 1)
    assert full * 0.5 <= delay <= full


@pytest.mark.req("Retries wait longer each time")
@given(seed=st.integers(min_value=0, max_value=2**32), k=st.integers(min_value=1, max_value=10))
def test_the_next_retry_never_waits_less_than_the_least_before(seed: int, k: int) -> None:
    # With factors from uniform(0.5, 1), the k+1-th delay is at least the k-th's upper bound.
    rng = random.Random(seed)
    now = retry_delay(15, k, rng.uniform(0.5, 1.0))
    later = retry_delay(15, k + 1, rng.uniform(0.5, 1.0))
    assert later >= 15 * 2 ** (k - 1) >= now


@pytest.mark.parametrize(
    ("base", "k", "factor"),
    [
        (15, 0, 1.0),
        (15, -1, 0.7),
        (15, 1, 0.49),
        (15, 1, 1.01),
        (15, 1, float("nan")),
        (-1, 1, 0.7),
        (float("inf"), 1, 0.7),
        (15, True, 0.7),
        (15, 1.0, 0.7),
    ],
)
def test_bad_arguments_are_refused(base: float, k: int, factor: float) -> None:
    with pytest.raises(ValueError):
        retry_delay(base, k, factor)


# --- the spec's categories, not a list of texts alone (issue 19 §3) ---------------------------

CATEGORY_WORDINGS = {
    "too many concurrent requests": TransientCause.RATE_LIMIT,
    "Concurrent request limit exceeded": TransientCause.RATE_LIMIT,
    "503: too many parallel requests, slow down": TransientCause.RATE_LIMIT,
    "Connection was lost": TransientCause.LOST_CALL,
    "lost connection to server": TransientCause.LOST_CALL,
    "Error: the gateway lost its connection to the model": TransientCause.LOST_CALL,
}


@pytest.mark.parametrize(("text", "cause"), CATEGORY_WORDINGS.items(), ids=CATEGORY_WORDINGS.keys())
def test_a_concurrency_limit_or_a_lost_connection_in_other_words_is_transient(
    text: str, cause: TransientCause
) -> None:
    assert transient_cause(text) is cause


@pytest.mark.parametrize(
    "text",
    [
        "Concurrent request limit exceeded: your monthly quota is used up",
        "lost connection to server · You've hit your usage limit",
        "too many concurrent requests on this plan; add billing details to continue",
    ],
)
def test_the_never_transient_rows_still_win_over_the_new_wordings(text: str) -> None:
    assert transient_cause(text) is None
