"""A stand-in for the parts of Redash 25 that a query runner touches (see query_runner/__init__.py). Used only by
tests/test_client_redash.py when the real Redash is not installed (it is not on PyPI)."""

__version__ = "25.1.0"
