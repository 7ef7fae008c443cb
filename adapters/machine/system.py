"""The system clock and the cryptographic random source."""

from __future__ import annotations

import secrets
import time
from datetime import UTC, datetime

from concorde_workers.ports.machine.clock import Interrupt


class SystemClock:
    """`Clock` over the operating system's clocks."""

    def now_utc(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float, interrupt: Interrupt | None = None) -> bool:
        seconds = max(0.0, seconds)
        if interrupt is None:
            time.sleep(seconds)
            return True
        # Waiting on the interrupt itself: a cancellation wakes the wait at once, no polling.
        return not interrupt.wait(seconds)


class SecretsRandom:
    """`Random` from the `secrets` module: tokens others must not guess (run ids, runtime
    directory names) come from the operating system's CSPRNG, and so does the retry factor."""

    def __init__(self) -> None:
        self._system = secrets.SystemRandom()

    def hex_token(self, n_hex_digits: int) -> str:
        if n_hex_digits < 0:
            raise ValueError("n_hex_digits must not be negative")
        # token_hex gives two digits per byte; take one byte more and cut for odd lengths.
        return secrets.token_hex((n_hex_digits + 1) // 2)[:n_hex_digits]

    def uniform(self, a: float, b: float) -> float:
        return self._system.uniform(a, b)
