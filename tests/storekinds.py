"""`any_store`: the URL of an empty store of each kind — the embedded SQLite default and PostgreSQL
(a fresh database of the private test cluster, skipped with its reason when there is none) — for
tests of store-level semantics that must hold for both."""

import pytest


@pytest.fixture(params=["sqlite", "postgresql"])
def any_store(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite://{tmp_path}/schedules.db"
    return request.getfixturevalue("pg_db")
