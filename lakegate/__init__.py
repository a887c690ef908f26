"""lakegate: a streaming lakehouse for PostgreSQL with a federated SQL gateway.

``lakegate.connect(url, token=...)`` is the Python client (PEP 249, see :mod:`lakegate.gateway.client`). The import is
lazy so that ``import lakegate`` stays cheap: the client (httpx, pyarrow) loads on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lakegate.gateway.client import Connection


def connect(url: str | None = None, token: str | None = None, **kwargs: Any) -> Connection:
    """A PEP 249 connection to the gateway at ``url`` (see :func:`lakegate.gateway.client.connect`)."""
    from lakegate.gateway.client import connect as _connect

    return _connect(url, token, **kwargs)


def __getattr__(name: str) -> Any:
    """The rest of the DB-API module surface (``paramstyle``, ``Error``, ``NUMBER``, ...), loaded on use."""
    from lakegate.gateway import client

    if name in client.__all__:
        return getattr(client, name)
    raise AttributeError(f"module 'lakegate' has no attribute {name!r}")
