"""Clock and Random contracts: the system adapters and the fakes alike."""

from __future__ import annotations

import string
from datetime import UTC
from typing import Any

import pytest
from fakes.system import FakeClock, FakeRandom

from concorde_workers.adapters.machine.system import SecretsRandom, SystemClock
from concorde_workers.ports.machine.clock import Clock
from concorde_workers.ports.machine.random import Random


@pytest.fixture(params=["real", "fake"])
def clock(request: pytest.FixtureRequest) -> Any:
    return SystemClock() if request.param == "real" else FakeClock()


@pytest.fixture(params=["real", "fake"])
def random(request: pytest.FixtureRequest) -> Any:
    return SecretsRandom() if request.param == "real" else FakeRandom()


def test_clock_implements_the_port(clock: Any) -> None:
    assert isinstance(clock, Clock)


def test_now_is_aware_utc(clock: Any) -> None:
    now = clock.now_utc()
    assert now.tzinfo is not None
    assert now.utcoffset() == UTC.utcoffset(now)


def test_sleep_advances_monotonic_time(clock: Any) -> None:
    before_mono, before_wall = clock.monotonic(), clock.now_utc()
    clock.sleep(0.03125)  # a power of two: exact in binary floating point
    assert clock.monotonic() - before_mono >= 0.03125
    assert clock.now_utc() >= before_wall


def test_fake_clock_records_sleeps_without_waiting() -> None:
    clock = FakeClock()
    clock.sleep(15)
    clock.sleep(30)
    assert clock.sleeps == [15, 30]
    assert clock.monotonic() == clock.start_monotonic + 45


def test_random_implements_the_port(random: Any) -> None:
    assert isinstance(random, Random)


@pytest.mark.parametrize("n", [0, 1, 6, 7, 32])
def test_hex_token_has_exactly_n_lowercase_hex_digits(random: Any, n: int) -> None:
    token = random.hex_token(n)
    assert len(token) == n
    assert set(token) <= set(string.hexdigits.lower())


def test_uniform_stays_in_bounds(random: Any) -> None:
    for _ in range(50):
        assert 0.5 <= random.uniform(0.5, 1.0) <= 1.0


def test_fake_random_answers_from_its_script_and_records() -> None:
    random = FakeRandom.scripted(tokens=["abc123"], factors=[0.75])
    assert random.hex_token(6) == "abc123"
    assert random.uniform(0.5, 1.0) == 0.75
    assert random.calls == [("hex_token", 6), ("uniform", 0.5, 1.0)]
    with pytest.raises(AssertionError):
        FakeRandom.scripted(factors=[2.0]).uniform(0.5, 1.0)
