"""Reading a lake table with the Iceberg engines users bring: pyiceberg (Arrow and pandas), DuckDB on its own,
polars and Spark in local mode. Each reader returns an Arrow table with the table's columns, to be compared with
the source row by row (:func:`tests.lakehelp.arrow_rows`).

Spark needs Java and the Iceberg Spark runtime: :func:`spark_jars` fetches it (and the SQLite JDBC driver, for the
default SQL catalog) from Maven Central with ``mvn dependency:get`` into a cache
(``$LAKEGATE_TEST_MAVEN_REPO``, default ``~/.cache/lakegate-test/m2``) and says why when it cannot.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import shutil
import subprocess
import tempfile
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest
from pyiceberg.table import Table

from lakegate.connectors.iceberg.catalog import sqlite_path

SPARK_VERSION, SCALA_VERSION, ICEBERG_VERSION = "3.5", "2.12", "1.10.1"
SQLITE_JDBC = "org.xerial:sqlite-jdbc:3.46.1.3"
RUNTIME = f"org.apache.iceberg:iceberg-spark-runtime-{SPARK_VERSION}_{SCALA_VERSION}:{ICEBERG_VERSION}"


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table``'s columns in ``schema``'s order and, where a cast keeps the values, its types."""
    columns = []
    for field in schema:
        column = table[field.name]
        if column.type != field.type:
            # a type that does not cast (uuid as text, say) is compared as it is
            with contextlib.suppress(pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                column = column.cast(field.type)
        columns.append(column)
    return pa.table(columns, names=schema.names)


def pyiceberg_arrow(table: Table, _lake: Path) -> pa.Table:
    return table.scan().to_arrow()


def pyiceberg_pandas(table: Table, _lake: Path) -> pa.Table:
    frame = table.scan().to_pandas()
    return conform(pa.Table.from_pandas(frame, preserve_index=False), table.schema().as_arrow())


def duckdb_alone(table: Table, _lake: Path) -> pa.Table:
    con = duckdb.connect()
    try:
        con.execute("LOAD iceberg")
        location = table.metadata_location.replace("'", "''")
        result = con.execute(f"SELECT * FROM iceberg_scan('{location}')").to_arrow_table()
    finally:
        con.close()
    return conform(result, table.schema().as_arrow())


def polars_scan(table: Table, _lake: Path) -> pa.Table:
    os.environ.setdefault("POLARS_ICEBERG_PLANNER", "pyiceberg")  # the faster planner is a separate package
    import polars

    frame = polars.scan_iceberg(table.metadata_location).collect()
    return conform(frame.to_arrow(), table.schema().as_arrow())


READERS: dict[str, Callable[[Table, Path], pa.Table]] = {
    "pyiceberg-arrow": pyiceberg_arrow,
    "pyiceberg-pandas": pyiceberg_pandas,
    "duckdb": duckdb_alone,
    "polars": polars_scan,
}


# -------------------------------------------------------------------------------------------------- Spark


def maven_repo() -> Path:
    return Path(os.environ.get("LAKEGATE_TEST_MAVEN_REPO", Path.home() / ".cache" / "lakegate-test" / "m2"))


def _jar(repo: Path, coordinates: str) -> Path | None:
    group, artifact, version = coordinates.split(":")
    path = repo.joinpath(*group.split("."), artifact, version, f"{artifact}-{version}.jar")
    return path if path.exists() else None


@functools.cache
def spark_jars() -> tuple[list[str], str]:
    """(jar paths, "") or ([], why Spark cannot run here)."""
    if shutil.which("java") is None:
        return [], "no java on PATH (Spark needs Java 17)"
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return [], "pyspark is not installed (pip install -e '.[test]')"
    repo = maven_repo()
    jars = []
    for coordinates in (RUNTIME, SQLITE_JDBC):
        jar = _jar(repo, coordinates)
        if jar is None:
            if shutil.which("mvn") is None:
                return [], f"{coordinates} is not in {repo} and there is no mvn to fetch it"
            done = subprocess.run(
                [
                    "mvn",
                    "-q",
                    "-B",
                    "dependency:get",
                    f"-Dartifact={coordinates}",
                    "-Dtransitive=false",
                    f"-Dmaven.repo.local={repo}",
                ],
                capture_output=True,
                text=True,
                timeout=600,
            )
            jar = _jar(repo, coordinates)
            if jar is None:
                return [], f"mvn could not fetch {coordinates}: {(done.stdout + done.stderr)[-500:]}"
        jars.append(str(jar))
    return jars, ""


def _empty(frame: Any) -> pa.Table:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(frame.schema).empty_table()


class SparkReader:
    """One local Spark session with the Iceberg runtime and the SQLite JDBC driver."""

    def __init__(self, jars: list[str]) -> None:
        from pyspark.sql import SparkSession

        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        self._dir = Path(tempfile.mkdtemp(prefix="lakegate-spark-"))
        self.session = (
            SparkSession.builder.master("local[1]")
            .appName("lakegate-readers")
            .config("spark.jars", ",".join(jars))
            .config(
                "spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
            )
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "1")
            .config("spark.driver.extraJavaOptions", f"-Djava.io.tmpdir={self._dir}")
            .getOrCreate()
        )
        self.session.sparkContext.setLogLevel("ERROR")

    def __call__(self, table: Table, _lake: Path) -> pa.Table:
        """The table at its current metadata file (Iceberg's Spark source loads a ``.metadata.json`` path)."""
        return self._arrow(self.session.read.format("iceberg").load(table.metadata_location), table)

    def via_catalog(self, table: Table, lake: Path, catalog_name: str) -> pa.Table:
        """The table through Iceberg's JDBC catalog on lakegate's SQLite catalog, configured as the README says
        (the Spark catalog's name must be the lake's name: it is the catalog_name column of the catalog's
        tables). A catalog name is configured once per session: call this once per name."""
        catalog_db = sqlite_path(f"sqlite:///{lake / 'catalog.db'}")
        assert catalog_db is not None and catalog_db.exists(), f"no SQLite catalog at {catalog_db}"
        conf = self.session.conf
        prefix = f"spark.sql.catalog.{catalog_name}"
        conf.set(prefix, "org.apache.iceberg.spark.SparkCatalog")
        conf.set(f"{prefix}.type", "jdbc")
        conf.set(f"{prefix}.uri", f"jdbc:sqlite:{catalog_db}")
        conf.set(f"{prefix}.warehouse", (lake / "warehouse").as_uri())
        namespace, table_name = table.name()[-2:]
        return self._arrow(self.session.table(f"{catalog_name}.`{namespace}`.`{table_name}`"), table)

    @staticmethod
    def _arrow(frame: Any, table: Table) -> pa.Table:
        batches = frame._collect_as_arrow()  # pyspark 3.5's Arrow collect (toArrow() is 4.0's)
        result = pa.Table.from_batches(batches) if batches else _empty(frame)
        return conform(result, table.schema().as_arrow())

    def stop(self) -> None:
        """Stop Spark and its JVM, closing py4j's sockets now rather than whenever they are collected."""
        from py4j.protocol import Py4JError
        from pyspark import SparkContext

        gateway = SparkContext._gateway
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            try:
                self.session.stop()
                if gateway is not None:
                    gateway.shutdown()
            except (
                Py4JError,
                OSError,
            ) as exc:  # the JVM is gone already: nothing left to stop but the process
                print(f"\nSpark had stopped before the end of the tests: {exc}")
            proc = getattr(gateway, "proc", None)  # the JVM, which exits when its stdin closes
            if proc is not None:
                proc.stdin.close()
                try:
                    proc.wait(60)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(10)
            SparkContext._gateway = SparkContext._jvm = None
            gc.collect()
        shutil.rmtree(self._dir, ignore_errors=True)


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkReader]:
    """A Spark reader; the test is skipped, saying why, where Java, pyspark or the jars are missing (a check
    whose tool is missing never passes)."""
    jars, why = spark_jars()
    if not jars:
        pytest.skip(f"Spark reader: {why}")
    reader = SparkReader(jars)
    yield reader
    reader.stop()


def readers(spark_reader: SparkReader | None) -> dict[str, Callable[[Table, Path], Any]]:
    """Every reader available here (Spark only when it can run)."""
    found: dict[str, Callable[[Table, Path], Any]] = dict(READERS)
    if spark_reader is not None:
        found["spark"] = spark_reader
    return found


#: py4j lets the sockets of Spark's gateway be closed by the garbage collector (ResourceWarning)
SPARK_WARNINGS = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

__all__ = ["READERS", "conform", "readers", "SPARK_WARNINGS", "spark", "spark_jars", "SparkReader"]
