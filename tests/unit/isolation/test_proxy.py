"""seed 000 "Proxy": every rule, row by row, and properties over arbitrary host environments."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from concorde_workers.domain.isolation.proxy import (
    ALL_PROXY_NAMES,
    NO_PROXY_VARIABLES,
    PROXY_VARIABLES,
    is_loopback_host,
    is_loopback_proxy,
    proxy_host,
    proxy_variables,
    without_loopback,
)

REQ = "A worker's model calls use the host's proxy"
LOOP = "http://127.0.0.1:3128"
ELSEWHERE = "http://proxy.corp.example:8080"


@pytest.mark.req(REQ)
@pytest.mark.parametrize(
    ("host_env", "expected"),
    [
        # No proxy in the host: no proxy variable at all, whatever the no-proxy lists say.
        ({}, {}),
        ({"NO_PROXY": "localhost", "no_proxy": "example.com"}, {}),
        # Each of the four proxy variables passes when set to a non-empty value.
        ({"HTTP_PROXY": ELSEWHERE}, {"HTTP_PROXY": ELSEWHERE}),
        ({"HTTPS_PROXY": ELSEWHERE}, {"HTTPS_PROXY": ELSEWHERE}),
        ({"http_proxy": ELSEWHERE}, {"http_proxy": ELSEWHERE}),
        ({"https_proxy": ELSEWHERE}, {"https_proxy": ELSEWHERE}),
        (
            {n: ELSEWHERE for n in PROXY_VARIABLES},
            {n: ELSEWHERE for n in PROXY_VARIABLES},
        ),
        # An empty (or blank) proxy does not pass, and then neither do the lists.
        ({"HTTPS_PROXY": ""}, {}),
        ({"HTTPS_PROXY": "   "}, {}),
        ({"HTTPS_PROXY": "", "NO_PROXY": "example.com"}, {}),
        # Other proxy variables never pass.
        ({"ALL_PROXY": ELSEWHERE, "all_proxy": ELSEWHERE, "FTP_PROXY": ELSEWHERE}, {}),
        (
            {"HTTPS_PROXY": ELSEWHERE, "ALL_PROXY": LOOP, "SOCKS_PROXY": LOOP},
            {"HTTPS_PROXY": ELSEWHERE},
        ),
        # A proxy elsewhere: the lists pass as they are, loopback kept, byte for byte.
        (
            {"HTTPS_PROXY": ELSEWHERE, "NO_PROXY": "localhost, 127.0.0.1,::1,[::1],.corp"},
            {"HTTPS_PROXY": ELSEWHERE, "NO_PROXY": "localhost, 127.0.0.1,::1,[::1],.corp"},
        ),
        (
            {"HTTPS_PROXY": ELSEWHERE, "no_proxy": "localhost"},
            {"HTTPS_PROXY": ELSEWHERE, "no_proxy": "localhost"},
        ),
        # Both lists pass when set.
        (
            {"HTTPS_PROXY": ELSEWHERE, "NO_PROXY": "a.example", "no_proxy": "b.example"},
            {"HTTPS_PROXY": ELSEWHERE, "NO_PROXY": "a.example", "no_proxy": "b.example"},
        ),
        # Every proxy on loopback: the loopback entries go, the others stay in order.
        (
            {
                "HTTPS_PROXY": LOOP,
                "NO_PROXY": "localhost, 127.0.0.1, b.example ,::1,[::1],a.example",
            },
            {"HTTPS_PROXY": LOOP, "NO_PROXY": "b.example,a.example"},
        ),
        (
            {"HTTP_PROXY": LOOP, "https_proxy": "localhost:8080", "no_proxy": "LOCALHOST,x"},
            {"HTTP_PROXY": LOOP, "https_proxy": "localhost:8080", "no_proxy": "x"},
        ),
        # A list with nothing left is not passed at all.
        (
            {"HTTPS_PROXY": LOOP, "NO_PROXY": "localhost,127.0.0.1,::1,[::1]"},
            {"HTTPS_PROXY": LOOP},
        ),
        (
            {"HTTPS_PROXY": LOOP, "NO_PROXY": "localhost", "no_proxy": "127.0.0.1, ::1"},
            {"HTTPS_PROXY": LOOP},
        ),
        ({"HTTPS_PROXY": ELSEWHERE, "NO_PROXY": ""}, {"HTTPS_PROXY": ELSEWHERE}),
        ({"HTTPS_PROXY": ELSEWHERE, "NO_PROXY": " , ,"}, {"HTTPS_PROXY": ELSEWHERE}),
        # One proxy elsewhere among loopback ones: the lists stay as they are.
        (
            {"HTTP_PROXY": LOOP, "HTTPS_PROXY": ELSEWHERE, "NO_PROXY": "localhost"},
            {"HTTP_PROXY": LOOP, "HTTPS_PROXY": ELSEWHERE, "NO_PROXY": "localhost"},
        ),
        # An empty proxy does not count among the passed proxies.
        (
            {"HTTP_PROXY": "", "HTTPS_PROXY": LOOP, "NO_PROXY": "localhost,a"},
            {"HTTPS_PROXY": LOOP, "NO_PROXY": "a"},
        ),
        # Only the four loopback entries are removed; other loopback forms stay.
        (
            {"HTTPS_PROXY": LOOP, "NO_PROXY": "127.0.0.0/8,.localhost,localhost:80,127.0.0.2"},
            {"HTTPS_PROXY": LOOP, "NO_PROXY": "127.0.0.0/8,.localhost,localhost:80,127.0.0.2"},
        ),
    ],
)
def test_proxy_rules(host_env: dict[str, str], expected: dict[str, str]) -> None:
    assert proxy_variables(host_env) == expected


@pytest.mark.req(REQ)
@pytest.mark.parametrize(
    "value",
    [
        "localhost",
        "LocalHost",
        "localhost:3128",
        "http://localhost",
        "http://localhost:3128/",
        "socks5h://localhost:1080",
        "127.0.0.1",
        "127.0.0.1:8080",
        "http://127.0.0.1:8080",
        "http://127.1.2.3:9",
        "https://user:secret@127.0.0.1:8443/path?q#f",
        "user:secret@localhost:8080",
        "::1",
        "[::1]",
        "[::1]:8080",
        "http://[::1]:8080",
        "http://u:p@[::1]:1/",
        " http://127.0.0.1:1 ",
    ],
)
def test_loopback_proxies(value: str) -> None:
    assert is_loopback_proxy(value)


@pytest.mark.req(REQ)
@pytest.mark.parametrize(
    "value",
    [
        "http://proxy.corp.example:8080",
        "proxy:3128",
        "http://10.0.0.1:3128",
        "http://128.0.0.1",
        "http://[::2]:1",
        "http://localhost.example.com",
        "http://notlocalhost",
        "http://localhost@evil.example:1",
        "http://[::ffff:127.0.0.1]:1",
        "http://",
        "",
    ],
)
def test_non_loopback_proxies(value: str) -> None:
    assert not is_loopback_proxy(value)


def test_proxy_host_parts() -> None:
    assert proxy_host("http://u:p@Proxy.Example:8080/x") == "proxy.example"
    assert proxy_host("[::1]:3128") == "::1"
    assert proxy_host("::1") == "::1"
    assert is_loopback_host("[::1]")
    assert not is_loopback_host("")


def test_without_loopback_keeps_order_and_trims() -> None:
    assert without_loopback(" b , localhost ,a,,[::1]") == "b,a"


@pytest.mark.req(REQ)
def test_loopback_proxy_with_loopback_no_proxy_keeps_endpoint_reachable() -> None:
    """The spec's motivating case: a local proxy and a no-proxy list naming loopback."""
    env = {
        "HTTPS_PROXY": "http://localhost:41237",
        "HTTP_PROXY": "http://localhost:41237",
        "NO_PROXY": "localhost,127.0.0.1,::1",
        "no_proxy": "localhost,127.0.0.1,::1",
        "ALL_PROXY": "socks5h://localhost:41238",
    }
    assert proxy_variables(env) == {
        "HTTPS_PROXY": "http://localhost:41237",
        "HTTP_PROXY": "http://localhost:41237",
    }


_names = st.sampled_from([*ALL_PROXY_NAMES, "ALL_PROXY", "all_proxy", "FTP_PROXY", "PATH", "X"])
_values = st.one_of(
    st.sampled_from(
        ["", " ", LOOP, ELSEWHERE, "localhost", "[::1]:1", "localhost,127.0.0.1", "a,::1,b"]
    ),
    st.text(max_size=30),
)


@pytest.mark.req(REQ)
@given(st.dictionaries(_names, _values))
def test_output_stays_within_the_host_values(host_env: dict[str, str]) -> None:
    result = proxy_variables(host_env)
    assert set(result) <= set(ALL_PROXY_NAMES)
    for name, value in result.items():
        assert name in host_env
        assert value.strip()
        if name in PROXY_VARIABLES:
            assert value == host_env[name]
        else:
            # A no-proxy list is the host's or a subset of its entries, in order.
            host_entries = [e.strip() for e in host_env[name].split(",") if e.strip()]
            entries = [e.strip() for e in value.split(",") if e.strip()]
            assert value == host_env[name] or entries == [e for e in host_entries if e in entries]
    passed = [n for n in PROXY_VARIABLES if n in result]
    if not passed:
        assert result == {}
    assert all(name in result for name in PROXY_VARIABLES if host_env.get(name, "").strip())


@given(st.dictionaries(_names, _values))
def test_lists_only_lose_loopback_entries(host_env: dict[str, str]) -> None:
    result = proxy_variables(host_env)
    for name in NO_PROXY_VARIABLES:
        if name in result and result[name] != host_env[name]:
            removed = {e.strip().lower() for e in host_env[name].split(",") if e.strip()} - {
                e.lower() for e in result[name].split(",")
            }
            assert removed <= {"localhost", "127.0.0.1", "::1", "[::1]"}
