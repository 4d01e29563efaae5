"""Migrations replay into an empty database and give exactly the expected schema."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from citerun.core import db

EXPECTED = Path(__file__).with_name("expected_schema.txt")

_SCHEMA_QUERY = """
SELECT 'column ' || table_name || '.' || column_name || ' ' || data_type
       || CASE WHEN is_nullable = 'NO' THEN ' not null' ELSE '' END
       || coalesce(' default ' || column_default, '')
FROM information_schema.columns WHERE table_schema = 'public'
UNION ALL
SELECT 'index ' || indexdef FROM pg_indexes WHERE schemaname = 'public'
UNION ALL
SELECT 'constraint ' || conrelid::regclass || ' ' || pg_get_constraintdef(oid)
FROM pg_constraint WHERE connamespace = 'public'::regnamespace
UNION ALL
SELECT 'extension ' || extname FROM pg_extension
ORDER BY 1
"""


async def _schema(url: str) -> str:
    conn = await db.connect(url)
    try:
        return "\n".join(r[0] for r in await conn.fetch(_SCHEMA_QUERY)) + "\n"
    finally:
        await conn.close()


async def test_replaying_all_migrations_gives_the_expected_schema(fresh_database_url: str) -> None:
    applied = await db.migrate(fresh_database_url)
    assert applied == [m.version for m in db.available_migrations()]
    schema = await _schema(fresh_database_url)
    if os.environ.get("CITERUN_UPDATE_SCHEMA") == "1":
        EXPECTED.write_text(schema)
    assert schema == EXPECTED.read_text(), (
        "the migrated schema differs from tests/db/expected_schema.txt; if the change is "
        "intended, rerun with CITERUN_UPDATE_SCHEMA=1 and review the diff")
    assert await db.migrate(fresh_database_url) == []


async def test_an_edited_applied_migration_is_an_error(fresh_database_url: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    await db.migrate(fresh_database_url)
    original = db.available_migrations()
    edited = [db.Migration(m.version, m.name, m.text + "\n-- edited\n") for m in original]
    monkeypatch.setattr(db, "available_migrations", lambda: edited)
    with pytest.raises(db.MigrationError, match="was changed after it was applied"):
        await db.migrate(fresh_database_url)


async def test_a_failing_migration_leaves_nothing_half_applied(fresh_database_url: str,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    broken = db.available_migrations() + [db.Migration(9999, "broken",
                                                       "CREATE TABLE half (x int); SELECT 1/0;")]
    monkeypatch.setattr(db, "available_migrations", lambda: broken)
    with pytest.raises(db.MigrationError, match="9999_broken.sql failed"):
        await db.migrate(fresh_database_url)
    conn = await db.connect(fresh_database_url)
    try:
        assert await conn.fetchval("SELECT to_regclass('half')") is None
        assert await conn.fetchval("SELECT max(version) FROM schema_migrations") == (
            broken[-2].version)
        # The advisory lock was released even though the migration failed.
        assert await conn.fetchval("SELECT pg_try_advisory_lock($1)", db.MIGRATION_LOCK_KEY)
    finally:
        await conn.close()
