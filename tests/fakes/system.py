"""FakeClock and FakeRandom: time that moves only when asked, randomness that is scripted."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from concorde_workers.ports.machine.clock import Interrupt


@dataclass
class FakeClock:
    """`Clock` whose `sleep` returns at once and advances both clocks by the time slept.

    `sleeps` records every requested delay; `advance(s)` moves time without a sleep (a round
    that took s seconds).
    """

    start: datetime = field(default_factory=lambda: datetime(2026, 1, 1, tzinfo=UTC))
    start_monotonic: float = 1000.0
    sleeps: list[float] = field(default_factory=list)
    _elapsed: float = 0.0

    def now_utc(self) -> datetime:
        return self.start + timedelta(seconds=self._elapsed)

    def monotonic(self) -> float:
        return self.start_monotonic + self._elapsed

    def sleep(self, seconds: float, interrupt: Interrupt | None = None) -> bool:
        self.sleeps.append(seconds)
        if interrupt is not None and interrupt.is_set():
            return False
        self._elapsed += max(0.0, seconds)
        return True

    def advance(self, seconds: float) -> None:
        self._elapsed += seconds


@dataclass
class FakeRandom:
    """`Random` answering from scripts. `tokens` are handed out in order by `hex_token` (a
    deterministic counter-based token when the script is empty); `factors` in order by
    `uniform` (the midpoint of [a, b] when empty). `calls` records ("hex_token", n) and
    ("uniform", a, b)."""

    tokens: deque[str] = field(default_factory=deque)
    factors: deque[float] = field(default_factory=deque)
    calls: list[tuple[object, ...]] = field(default_factory=list)
    _counter: int = 0

    @classmethod
    def scripted(cls, tokens: Iterable[str] = (), factors: Iterable[float] = ()) -> FakeRandom:
        return cls(tokens=deque(tokens), factors=deque(factors))

    def hex_token(self, n_hex_digits: int) -> str:
        self.calls.append(("hex_token", n_hex_digits))
        if self.tokens:
            token = self.tokens.popleft()
            if len(token) != n_hex_digits or any(c not in "0123456789abcdef" for c in token):
                raise AssertionError(f"scripted token {token!r} is not {n_hex_digits} hex digits")
            return token
        self._counter += 1
        return (
            format(self._counter, "x").rjust(n_hex_digits, "0")[-n_hex_digits:]
            if (n_hex_digits)
            else ""
        )

    def uniform(self, a: float, b: float) -> float:
        self.calls.append(("uniform", a, b))
        if self.factors:
            value = self.factors.popleft()
            lo, hi = min(a, b), max(a, b)
            if not lo <= value <= hi:
                raise AssertionError(f"scripted factor {value} is outside [{a}, {b}]")
            return value
        return (a + b) / 2
