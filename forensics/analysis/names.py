"""Host names and rooms as the store knows them, so that a misspelt `--host`, `clocks set` or `-p host=` is
refused, not silently empty."""

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
        raise UsageError(
            f"{opt}{'' if opt.endswith('=') else ' '}{host}: no such host in the store",
            help=f"known hosts: {listing(hosts)}",
        )


def check_room(con, room: int | None, opt: str = "room") -> None:
    """Refuse a bootstrap room no row of the store names, naming some that it has."""
    if room is None:
        return
    [(found,)] = con.execute("SELECT count(*) FROM rooms WHERE bootstrap_room = $room", {"room": room}).fetchall()
    if found:
        return
    [(n,)] = con.execute("SELECT count(*) FROM rooms").fetchall()
    some = [
        str(r) for (r,) in con.execute("SELECT bootstrap_room FROM rooms ORDER BY bootstrap_room LIMIT 5").fetchall()
    ]
    known = f"{', '.join(some)}{f' and {n - len(some)} more' if n > len(some) else ''}" if some else "none"
    raise UsageError(
        f"{opt}{'' if opt.endswith('=') else ' '}{room}: no such room in the store",
        help=f'known rooms: {known} (`forensics sql "SELECT bootstrap_room, outcome FROM rooms"` lists them)',
    )


def _is(name: str, what: str) -> bool:
    return name == what or name.endswith(f"_{what}")


def run_query(session, name: str, params: dict | None = None):
    """The named query `name` with `params` on the session, its host and room parameters (`host`,
    `decode_host`, `room`, `bootstrap_room`, ...) first checked against the store, as `--host` is."""
    # an unknown name or a bad parameter is said before the store is read
    bound = queries.get(name).bind(params)
    for k, v in bound.items():
        if v is None or k not in (params or {}):
            continue
        if _is(k, "host"):
            check_host(session.con, v, opt=f"-p {k}=")
        elif _is(k, "room"):
            check_room(session.con, int(v), opt=f"-p {k}=")
    return session.query(name, params)
