import psycopg


def test_fixture_gives_logical_wal_and_isolated_databases(pg: psycopg.Connection, pg_dsn: str) -> None:
    assert pg.execute("SHOW wal_level").fetchone() == ("logical",)
    pg.execute("CREATE TABLE t (id int PRIMARY KEY)")
    pg.execute("INSERT INTO t VALUES (1), (2)")
    with psycopg.connect(pg_dsn) as other:
        assert other.execute("SELECT count(*) FROM t").fetchone() == (2,)
    assert pg.execute("SELECT current_database()").fetchone()[0] in pg_dsn
