"""How a pooled gateway session is reset between two queries (psycopg_pool's ``reset``), so that nothing of one
request is visible to the next, whichever token sent it.

1. ``DISCARD ALL`` (PostgreSQL's documented equivalent: ``CLOSE ALL; SET SESSION AUTHORIZATION DEFAULT; RESET
   ALL; DEALLOCATE ALL; UNLISTEN *; SELECT pg_advisory_unlock_all(); DISCARD PLANS; DISCARD TEMP; DISCARD
   SEQUENCES``): cursors WITH HOLD, ``SET ROLE``/``SET SESSION AUTHORIZATION``, every setting (``SET``,
   ``set_config(..., false)``; back to the start-up options), prepared statements (SQL and protocol level),
   LISTEN, session advisory locks (``pg_advisory_lock``, ``pg_try_advisory_lock``, shared ones), cached plans,
   temporary tables, functions and sequences, ``currval``/``lastval``. It must be a query of its own: it refuses
   a transaction block, and PostgreSQL runs a query of several statements as one.
2. ``setseed`` with a seed drawn from :mod:`secrets`. The generator behind ``random()``, ``random_normal()``
   (PostgreSQL 16+) and ``random(min, max)`` (17+) is one per backend; DISCARD ALL leaves it alone (``SET seed``
   is ``NO_RESET_ALL``: ``pg_settings_get_flags('seed')``), so a query that called ``setseed(0.5)``, or read
   enough of ``random()`` to know the generator's state, could predict another token's next ``random()``. The
   seed is a parameter, not text of the query: ``pg_stat_activity`` shows an idle pooled session's last query to
   other sessions of the gateway's role.
3. PostgreSQL 18+ (``pg_get_loaded_modules()``): a session that loaded a library keeping session state of its
   own, out of DISCARD ALL's reach and reachable by a later query (dblink's open connections, postgres_fdw's
   cached ones, the global dictionaries of PL/Python, PL/Perl, PL/Tcl, PL/v8), is closed instead of reused.

psycopg_pool runs the reset in its worker thread when a session is given back, and hands the session out again
only after it; a reset that fails raises, and psycopg_pool then closes the connection instead of returning it to
the pool (a broken session is replaced by a new one).

Not reset, and not detectable by SQL: the *name* of a custom setting a query created (``set_config('x.y', ...,
false)``): RESET ALL empties its value, but ``current_setting('x.y')`` then returns '' instead of failing.
"""

from __future__ import annotations

import secrets

import psycopg
from psycopg import errors as pgerrors
from psycopg import pq

#: step 1, alone in its query
DISCARD = b"DISCARD ALL"
#: file names (prefixes) of libraries whose own per-session state a later query of the session could reach
STATEFUL_LIBRARIES = ("dblink", "postgres_fdw", "plpython", "plperl", "pltcl", "plv8")
#: step 2 (the seed travels as a parameter, so it is not part of the query's text)
RESEED = b"SELECT pg_catalog.setseed($1)"
#: steps 2 and 3, PostgreSQL 18+: the stateful libraries the session loaded (NULL for none). An aggregate: one row
#: even when no library matches, so setseed always runs (the cheapest form measured: ARRAY() cost ~25 µs more)
RESEED_AND_CHECK = (
    "SELECT pg_catalog.setseed($1), pg_catalog.string_agg(m.file_name, ', ') "
    "FROM pg_catalog.pg_get_loaded_modules() m WHERE m.file_name ~ '^(" + "|".join(STATEFUL_LIBRARIES) + ")'"
).encode()
LOADED_MODULES_SINCE = 180000  #: server_version_num of the first PostgreSQL with pg_get_loaded_modules()
FLOAT8 = 701  #: pg_type oid of the seed parameter
_DONE = (pq.ExecStatus.COMMAND_OK, pq.ExecStatus.TUPLES_OK)


def seed() -> float:
    """A seed for ``setseed()``, uniform over what it keeps: it takes [-1, 1] and multiplies by 2^52 - 1
    (``pg_prng_fseed``), so 53 random bits, exact in a float8."""
    return (secrets.randbits(53) - 2**52) / 2**52


def reset(conn: psycopg.Connection) -> None:
    """The pool's reset; raises (the pool then closes ``conn``) when it fails or cannot reset everything.

    Through libpq directly (the pool's worker owns the session; libpq waits without the GIL): psycopg's cursors
    cost more than the statements themselves (measured, PostgreSQL 18 on a unix socket: 237-316 µs a reset
    through cursors, 145-210 µs this way, against 58-90 µs for DISCARD ALL alone before)."""
    pgconn = conn.pgconn
    _check(conn, pgconn.exec_(DISCARD))
    check = conn.info.server_version >= LOADED_MODULES_SINCE
    # repr() is the shortest text that float8in reads back to the same double
    result = pgconn.exec_params(RESEED_AND_CHECK if check else RESEED, [repr(seed()).encode()], [FLOAT8])
    _check(conn, result)
    stateful = (result.get_value(0, 1) or b"").decode() if check else ""
    if stateful:
        raise psycopg.ProgrammingError(
            f"the session loaded {stateful}, whose session state DISCARD ALL does not reset: the connection is "
            "closed instead of going back to the pool"
        )


def _check(conn: psycopg.Connection, result: pq.abc.PGresult) -> None:
    if result.status not in _DONE:
        raise pgerrors.error_from_result(result, encoding=conn.info.encoding)
