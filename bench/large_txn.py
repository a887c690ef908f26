"""A huge source transaction: what it costs the worker and when readers see it (issue 11.7).

    python -m bench.large_txn [--rows 3000000] [--label after]

One ``INSERT … SELECT generate_series`` of ``--rows`` rows in one transaction into a replicated table, the worker
as its own process with the default settings (parts of ``max_batch_rows`` = 100,000 changes). Measured from the
moment PostgreSQL's COMMIT returns: when a plain pyiceberg reader first sees any row of the transaction in the
change log, when it sees all of them in the change log and in the state table, and the worker's peak RSS (before
the transaction and during it). To compare with an earlier version, run the same script with ``PYTHONPATH`` set to
a tree of that version laid out as installed (see ``.ci/check``).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

import psutil
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import machine, print_table, start_postgres, workdir  # noqa: E402
from bench.ingest import TABLE, Worker, config  # noqa: E402
from lakegate.connectors.iceberg import catalog as lake_catalog  # noqa: E402
from lakegate.settings import LakeSettings  # noqa: E402


def _records(catalog, name: str) -> int:  # type: ignore[no-untyped-def]
    table = catalog.load_table(name)
    snapshot = table.current_snapshot()
    if snapshot is None or snapshot.summary is None:
        return 0
    return int(snapshot.summary.additional_properties.get("total-records", 0))


def _added(catalog, name: str, rows: int) -> str:  # type: ignore[no-untyped-def]
    """Files added by the first snapshot of ``name`` at which the table holds every row of the transaction."""
    table = catalog.load_table(name)
    for snapshot in sorted(table.snapshots(), key=lambda s: s.sequence_number or 0):
        props = snapshot.summary.additional_properties if snapshot.summary else {}
        if int(props.get("total-records", 0)) >= rows + 1:
            return f"{props.get('added-data-files', 0)} data, {props.get('added-delete-files', 0)} delete"
    return "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=3_000_000)
    parser.add_argument("--label", default="lakegate")
    args = parser.parse_args()
    root = workdir("lakegate-bench-txn-")
    pg = start_postgres(root)
    dsn = pg.dsn()
    worker: Worker | None = None
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(TABLE.format("big"))
            conn.execute("INSERT INTO big VALUES (0, 0, 'seed', 0, now())")
        worker = Worker(config(root, dsn, "big", "lakegate_txn"), root / "worker.log")
        worker.wait_for("streaming from slot")
        catalog = lake_catalog.from_settings(
            LakeSettings(catalog_uri=f"sqlite:///{root}/catalog.db", warehouse=f"{root}/warehouse")
        )
        while _records(catalog, "public.big__changelog") < 1:
            time.sleep(0.1)
        rss_before = psutil.Process(worker.proc.pid).memory_info().rss
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(
                "INSERT INTO big SELECT g, g %% 1000, 'name ' || g, g / 100.0, now() - g * interval '1 second' "
                "FROM generate_series(1, %s) g",
                (args.rows,),
            )
        committed = time.monotonic()
        first = whole_log = whole_state = None
        while whole_state is None or whole_log is None:
            now = time.monotonic()
            logged = _records(catalog, "public.big__changelog") - 1
            if first is None and logged > 0:
                first = now - committed
            if whole_log is None and logged >= args.rows:
                whole_log = now - committed
            if whole_state is None and _records(catalog, "public.big") >= args.rows + 1:
                whole_state = now - committed
            if now - committed > 1800:
                raise TimeoutError("the transaction did not become visible within 30 minutes")
            time.sleep(0.05)
        peak = worker.stop()
        worker = None
        files = {  # the data and delete files the commit that showed the whole transaction added
            name: _added(catalog, f"public.{name}", args.rows) for name in ("big__changelog", "big")
        }
    finally:
        if worker is not None and worker.proc.poll() is None:  # a failed run leaves no worker behind
            worker.proc.kill()
            worker.proc.wait(30)
        pg.stop("immediate")
        shutil.rmtree(root, ignore_errors=True)
    print_table(
        f"One transaction of {args.rows:,} rows ({args.label}; {machine()}; one run on a shared machine)",
        [
            ("first rows visible to pyiceberg (change log)", f"{first:.1f} s", "", ""),
            ("whole transaction visible (change log)", f"{whole_log:.1f} s", "", ""),
            ("whole transaction visible (state table)", f"{whole_state:.1f} s", "", ""),
            ("files added by the commit that shows it (change log)", files["big__changelog"], "", ""),
            ("files added by the commit that shows it (state table)", files["big"], "", ""),
            ("worker RSS before the transaction", f"{rss_before / 2**20:,.0f} MiB", "", ""),
            ("worker peak RSS", f"{peak / 2**20:,.0f} MiB", "", ""),
        ],
    )


if __name__ == "__main__":
    main()
