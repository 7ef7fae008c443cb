"""The proxy variables a worker round inherits from the host (seed 000 "Proxy").

Rules, in the spec's order:

1. Each of HTTP_PROXY, HTTPS_PROXY, http_proxy and https_proxy that the host sets to a non-empty
   value passes, verbatim.
2. Only when at least one passed, each of NO_PROXY and no_proxy that the host sets passes too.
3. When every passed proxy names a loopback host (localhost or a loopback address, with or without
   a scheme, port or userinfo), the loopback entries localhost, 127.0.0.1, ::1 and [::1] are
   removed from those no-proxy lists; the other entries keep their order.
4. Otherwise the no-proxy lists pass as they are, so a developer's own proxy elsewhere keeps
   sending loopback direct.
5. A list with nothing left in it does not pass at all.
6. No other variable (ALL_PROXY, FTP_PROXY, ...) ever passes.

Decisions where the spec is silent (docs: the domain's proxy section):

* A value of only white space counts as empty: such a proxy is not passed, such a list has
  nothing in it.
* A no-proxy list is split on commas and each entry trimmed of white space; a rewritten list
  (rule 3) is joined with "," and drops empty entries. A list kept as it is (rule 4) passes
  byte for byte.
* The loopback entries are matched case-insensitively (host names are), and only these four exact
  entries are removed; other forms such as 127.0.0.0/8, .localhost or localhost:8080 stay.
* A loopback address is what `ipaddress` calls loopback: 127.0.0.0/8 and ::1 (bracketed or not).
  An IPv4-mapped address such as ::ffff:127.0.0.1 is not loopback in this sense.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping

PROXY_VARIABLES: tuple[str, ...] = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")
NO_PROXY_VARIABLES: tuple[str, ...] = ("NO_PROXY", "no_proxy")
ALL_PROXY_NAMES: tuple[str, ...] = PROXY_VARIABLES + NO_PROXY_VARIABLES
LOOPBACK_ENTRIES: frozenset[str] = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})


def _authority(value: str) -> str:
    """The authority part of a proxy value, with or without a scheme (urlsplit's convention:
    it ends at the first '/', '?' or '#')."""
    rest = value.strip()
    scheme_end = rest.find("://")
    if scheme_end >= 0:
        rest = rest[scheme_end + 3 :]
    for stop in "/?#":
        cut = rest.find(stop)
        if cut >= 0:
            rest = rest[:cut]
    return rest


def proxy_host(value: str) -> str:
    """The host a proxy value names, lower-cased and without brackets, port or userinfo;
    "" when it names none."""
    hostport = _authority(value).rpartition("@")[2]
    if hostport.startswith("["):
        end = hostport.find("]")
        host = hostport[1:end] if end > 0 else ""
    elif hostport.count(":") >= 2:
        host = hostport  # a bare IPv6 address such as ::1 carries no port
    else:
        host = hostport.partition(":")[0]
    return host.strip().lower()


def is_loopback_host(host: str) -> bool:
    """True for localhost or a loopback address (127.0.0.0/8, ::1), bracketed or not."""
    host = host.strip().lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_loopback_proxy(value: str) -> bool:
    """True when the proxy value names a loopback host, with or without scheme, port or
    userinfo."""
    return is_loopback_host(proxy_host(value))


def _entries(value: str) -> list[str]:
    return [entry.strip() for entry in value.split(",") if entry.strip()]


def without_loopback(no_proxy: str) -> str:
    """The no-proxy list without the loopback entries, the others in order, joined by ","."""
    return ",".join(e for e in _entries(no_proxy) if e.lower() not in LOOPBACK_ENTRIES)


def proxy_variables(host_env: Mapping[str, str]) -> dict[str, str]:
    """The proxy variables a worker round gets, derived from the host's environment."""
    passed = {
        name: host_env[name]
        for name in PROXY_VARIABLES
        if name in host_env and host_env[name].strip()
    }
    if not passed:
        return {}
    all_loopback = all(is_loopback_proxy(value) for value in passed.values())
    result = dict(passed)
    for name in NO_PROXY_VARIABLES:
        if name not in host_env:
            continue
        value = host_env[name]
        if all_loopback:
            value = without_loopback(value)
        if _entries(value):
            result[name] = value
    return result
