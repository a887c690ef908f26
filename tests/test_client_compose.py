"""The docker compose deployment: ``docker compose config`` accepts compose/docker-compose.yml (when a compose
client is installed; there is no Docker engine here), the file wires what the README promises (logical
replication, ingest, gateway, Redash with the runner mounted, provisioning), compose/lakegate.toml is a valid
lakegate configuration, and the provisioning script's plain parts."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from lakegate import settings as settings_mod
from tests.clienthelp import ROOT

COMPOSE = ROOT / "compose"
FILE = COMPOSE / "docker-compose.yml"


def compose_command() -> list[str] | None:
    docker = shutil.which("docker")
    if docker and subprocess.run([docker, "compose", "version"], capture_output=True).returncode == 0:
        return [docker, "compose"]
    legacy = shutil.which("docker-compose")
    return [legacy] if legacy else None


def _check_services(config: dict[str, Any]) -> None:
    services = config["services"]
    assert {
        "postgres",
        "ingest",
        "gateway",
        "redis",
        "redash-postgres",
        "redash-create-db",
        "redash-admin",
        "redash-server",
        "redash-scheduler",
        "redash-worker",
        "provision",
    } <= set(services)
    assert "wal_level=logical" in services["postgres"]["command"]
    for name in ("ingest", "gateway"):
        assert services[name]["command"][0] in ("ingest", "serve")
        assert "lake:/data" in "".join(str(v) for v in services[name]["volumes"])
        assert "LAKEGATE_GATEWAY__TOKENS" in services[name]["environment"]
    for name in ("redash-server", "redash-worker", "redash-scheduler"):
        redash = services[name]
        assert redash["image"].startswith("redash/redash:")
        assert redash["environment"]["REDASH_ADDITIONAL_QUERY_RUNNERS"] == "lakegate_query_runner"
        assert redash["environment"]["PYTHONPATH"] == "/opt/lakegate"
        mounts = " ".join(str(v) for v in redash["volumes"])
        assert "lakegate_query_runner.py:/opt/lakegate/lakegate_query_runner.py" in mounts
    assert "QUEUES" in services["redash-worker"]["environment"]
    admin = " ".join(services["redash-admin"]["command"])  # Redash's command, not its newsletter-subscribing /setup
    assert "manage users create_root" in admin and "--org default" in admin
    assert "redash-admin" in services["provision"]["depends_on"]


def test_compose_file_wires_the_services() -> None:
    config = yaml.safe_load(FILE.read_text())  # resolves the <<: merges the way compose does
    _check_services(config)
    for mount in (
        config["services"]["postgres"]["volumes"][:2] + config["services"]["redash-server"]["volumes"]
    ):
        source = mount.split(":")[0]
        assert (COMPOSE / source).resolve().exists(), mount
    dockerfile = (COMPOSE / "Dockerfile").read_text()
    for line in dockerfile.splitlines():
        if line.startswith("COPY "):
            for source in line.split()[1:-1]:
                assert (ROOT / source).exists(), line


@pytest.mark.skipif(compose_command() is None, reason="no docker compose client installed")
def test_docker_compose_config_validates() -> None:
    command = compose_command()
    assert command is not None
    result = subprocess.run(
        [*command, "-f", str(FILE), "config"], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr
    _check_services(yaml.safe_load(result.stdout))


def test_compose_lakegate_toml_is_a_valid_configuration() -> None:
    settings = settings_mod.load(
        COMPOSE / "lakegate.toml",
        environ={"LAKEGATE_GATEWAY__TOKENS": "t1,t2", "LAKEGATE_SOURCES__PG__DSN": "postgresql://u@db/app"},
    )
    assert settings.gateway.tokens == ["t1", "t2"] and settings.sources[0].dsn == "postgresql://u@db/app"
    assert settings.gateway.host == "0.0.0.0" and settings.lake.catalog_uri.startswith("sqlite:////data/")
    assert set(settings.sources[0].replicate) == {
        "public.users",
        "public.transactions",
        "public.transaction_metadata",
    }


@pytest.fixture
def provision() -> Iterator[ModuleType]:
    spec = importlib.util.spec_from_file_location("lakegate_provision", COMPOSE / "provision.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


def test_provision_reads_examples_and_builds_queries(provision: ModuleType) -> None:
    examples = provision.read_examples(ROOT / "sql" / "examples")
    assert [e.title for e in examples][:2] == ["Latest state of transactions", "Total amount per user"]
    assert all(e.description and e.sql.startswith("SELECT") and not e.sql.endswith(";") for e in examples)
    query = yaml.safe_load(provision.json_source_query(examples[4].sql))
    assert query == {
        "url": "/v1/query",
        "method": "post",
        "json": {"sql": examples[4].sql + "\n"},
        "path": "rows",
    }
    positions = [provision.widget_position(i) for i in range(7)]
    cells = {(p["col"], p["row"]) for p in positions}
    assert len(cells) == 7 and all(p["col"] + p["sizeX"] <= 6 for p in positions)
    config = provision.Config.from_env({"LAKEGATE_TOKEN": "t", "REDASH_URL": "http://r:5000/"})
    assert (config.redash_url, config.token, config.gateway_url) == (
        "http://r:5000",
        "t",
        "http://gateway:8080",
    )


def test_provision_script_runs_standalone() -> None:
    result = subprocess.run(
        [sys.executable, str(COMPOSE / "provision.py"), "--help"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0 and "redash-toolbelt" in result.stdout
    assert Path(COMPOSE / "redash" / "lakegate_query_runner.py").exists()
