"""Hypothesis profiles: `fast` for a run at a desk, `thorough` for CI.

Every property test takes its number of examples from the profile loaded when the suite starts:
`fast` unless `HYPOTHESIS_PROFILE` (`.ci/run` sets `thorough`) or pytest's
`--hypothesis-profile NAME` names another. Both profiles drop Hypothesis's deadline and its
too-slow health check: each is a timed assertion, and the suite must pass on a busy machine
(HELPERS.md "Robust tests"). A property whose every example is costly — it runs Git, or it is a
batch of decisions — asks for a share of the profile's count with `examples()` instead of a
number of its own.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

FAST = "fast"
THOROUGH = "thorough"
ENVIRONMENT = "HYPOTHESIS_PROFILE"
FAST_EXAMPLES = 50
THOROUGH_EXAMPLES = 1000
LEAST_EXAMPLES = 10
"""`examples()` never asks for fewer: a property checked on a handful of inputs proves little."""


def register() -> None:
    """Register both profiles and load the one the environment names (`fast` by default)."""
    unhurried = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
    settings.register_profile(FAST, max_examples=FAST_EXAMPLES, **unhurried)
    settings.register_profile(
        THOROUGH, max_examples=THOROUGH_EXAMPLES, print_blob=True, **unhurried
    )
    settings.load_profile(os.environ.get(ENVIRONMENT) or FAST)


def examples(share: float, least: int = LEAST_EXAMPLES) -> int:
    """`share` of the loaded profile's examples, at least `least`, for a property whose every
    example is costly: one that runs Git, or one whose example is a whole batch of cases (least
    FAST_EXAMPLES keeps such a batch property as thorough at a desk as any other)."""
    return max(least, round(settings.default.max_examples * share))
