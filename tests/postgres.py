"""PostgreSQL fixtures: one throwaway cluster per test run, a fresh database per test.

- ``postgres_cluster`` (session): a ``lanemon.store.throwaway.ThrowawayCluster``, started the
  first time a test asks for it (runs without PostgreSQL tests never start one) and stopped
  at the end of the run. Where no cluster can run here the test is skipped with the reason,
  unless ``LANEMON_REQUIRE_POSTGRES=1`` (CI), where it fails instead. A cluster that can run
  but does not start is an error either way.
- ``postgres_url``: the URL of a new, empty database (from ``template0``, a unique name),
  dropped after the test (``WITH (FORCE)``, so a connection the test left open does not
  keep it).
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator

import pytest

from lanemon.store.throwaway import ThrowawayCluster, available

REQUIRE_ENV = "LANEMON_REQUIRE_POSTGRES"


def skip_or_fail(reason: str) -> None:
    """Skip the test for ``reason``, or fail it when ``LANEMON_REQUIRE_POSTGRES=1``."""
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{REQUIRE_ENV}=1 but {reason}", pytrace=False)
    pytest.skip(reason)


@contextlib.contextmanager
def fresh_database(cluster: ThrowawayCluster) -> Iterator[str]:
    """A new empty database of ``cluster`` for the block; its URL; dropped afterwards."""
    name = f"lanemon_t_{uuid.uuid4().hex[:16]}"
    url = cluster.create_database(name)
    try:
        yield url
    finally:
        if cluster.running:
            cluster.drop_database(name)


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[ThrowawayCluster]:
    here = available()
    if not here:
        skip_or_fail(f"no throwaway PostgreSQL cluster: {here.reason}")
    with ThrowawayCluster() as cluster:
        yield cluster


@pytest.fixture
def postgres_url(postgres_cluster: ThrowawayCluster) -> Iterator[str]:
    with fresh_database(postgres_cluster) as url:
        yield url
