"""Stand-in for ``redash.query_runner`` of Redash 25, reduced to the interface a runner module uses: the TYPE_*
constants, ``BaseQueryRunner`` / ``BaseSQLQueryRunner`` (configuration, ``syntax``, ``annotate_query``,
``test_connection`` through ``noop_query``, ``run_query`` returning ``(data, error)``), ``register`` and the
registry. Written from Redash's interface for the lakegate runner's tests; not Redash's code."""

from __future__ import annotations

from typing import Any

TYPE_INTEGER, TYPE_FLOAT, TYPE_BOOLEAN = "integer", "float", "boolean"
TYPE_STRING, TYPE_DATETIME, TYPE_DATE = "string", "datetime", "date"
SUPPORTED_COLUMN_TYPES = {TYPE_INTEGER, TYPE_FLOAT, TYPE_BOOLEAN, TYPE_STRING, TYPE_DATETIME, TYPE_DATE}


class InterruptException(Exception):
    pass


class NotSupported(Exception):
    pass


class BaseQueryRunner:
    deprecated = False
    should_annotate_query = True
    noop_query: str | None = None

    def __init__(self, configuration: dict[str, Any]) -> None:
        self.syntax = "sql"
        self.configuration = configuration

    @classmethod
    def name(cls) -> str:
        return cls.__name__

    @classmethod
    def type(cls) -> str:
        return cls.__name__.lower()

    @classmethod
    def enabled(cls) -> bool:
        return True

    @classmethod
    def configuration_schema(cls) -> dict[str, Any]:
        return {}

    def annotate_query(self, query: str, metadata: dict[str, Any]) -> str:
        if not self.should_annotate_query:
            return query
        return "/* " + ", ".join(f"{k}: {v}" for k, v in metadata.items()) + " */ " + query

    def test_connection(self) -> None:
        if self.noop_query is None:
            raise NotImplementedError()
        _, error = self.run_query(self.noop_query, None)
        if error is not None:
            raise Exception(error)

    def run_query(self, query: str, user: Any) -> tuple[Any, str | None]:
        raise NotImplementedError()

    def get_schema(self, get_stats: bool = False) -> list[dict[str, Any]]:
        raise NotSupported()

    @classmethod
    def to_dict(cls) -> dict[str, Any]:
        return {"name": cls.name(), "type": cls.type(), "configuration_schema": cls.configuration_schema()}


class BaseSQLQueryRunner(BaseQueryRunner):
    def get_schema(self, get_stats: bool = False) -> list[dict[str, Any]]:
        schema: dict[str, Any] = {}
        self._get_tables(schema)
        return list(schema.values())

    def _get_tables(self, schema_dict: dict[str, Any]) -> list[Any]:
        return []


query_runners: dict[str, type[BaseQueryRunner]] = {}


def register(query_runner_class: type[BaseQueryRunner]) -> None:
    if query_runner_class.enabled():
        query_runners[query_runner_class.type()] = query_runner_class


def get_query_runner(query_runner_type: str, configuration: dict[str, Any]) -> BaseQueryRunner | None:
    cls = query_runners.get(query_runner_type)
    return None if cls is None else cls(configuration)


def import_query_runners(query_runner_imports: list[str]) -> None:
    for runner_import in query_runner_imports:
        __import__(runner_import)
