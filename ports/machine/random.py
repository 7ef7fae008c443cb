"""The Random port: unpredictable tokens and the retry delay's random factor."""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class Random(Protocol):
    """Randomness the host needs, injected so tests can script it."""

    def hex_token(self, n_hex_digits: int) -> str:
        """`n_hex_digits` lowercase hexadecimal digits from a cryptographic source (run ids,
        runtime directory names that others must not guess)."""
        ...

    def uniform(self, a: float, b: float) -> float:
        """A float in [a, b] (the retry delay's U(0.5, 1) factor)."""
        ...
