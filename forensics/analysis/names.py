"""Host names as the store knows them, so that a misspelt `--host` or `clocks set` is refused, not silently empty."""

from __future__ import annotations

from forensics.catalog import named as queries
from forensics.core.errors import UsageError


def known_hosts(con) -> list[str]:
    """Every host name the store's rows carry, sorted."""
    return sorted(h for (h,) in con.execute(queries.internal("_known_hosts").sql).fetchall() if h is not None)


def listing(hosts: list[str], limit: int = 20) -> str:
    """'decode-0, decode-1, prefill-0' (the first `limit`, then how many more)."""
    if not hosts:
        return "none (the store holds no host's rows yet)"
    more = len(hosts) - limit
    return ", ".join(hosts[:limit]) + (f" and {more} more" if more > 0 else "")


def check_host(con, host: str | None, opt: str = "--host") -> None:
    """Refuse a host the store has never seen, naming the ones it has."""
    if host is None:
        return
    hosts = known_hosts(con)
    if host not in hosts:
        raise UsageError(f"{opt} {host}: no such host in the store", help=f"known hosts: {listing(hosts)}")
