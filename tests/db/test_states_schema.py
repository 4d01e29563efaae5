"""The state CHECKs of the migrated schema allow exactly citerun.core.states, and the queries
compare states with no other names."""

from __future__ import annotations

import re
from pathlib import Path

import asyncpg
import pytest

from citerun.core import states

SRC = Path(states.__file__).parent


@pytest.mark.parametrize("table", sorted(states.TABLES))
async def test_the_state_check_allows_exactly_the_enum(pool: asyncpg.Pool, table: str) -> None:
    definitions = await pool.fetch(
        "SELECT pg_get_constraintdef(c.oid) FROM pg_constraint c "
        "JOIN pg_class t ON t.oid = c.conrelid "
        "WHERE t.relname = $1 AND c.contype = 'c' "
        "AND pg_get_constraintdef(c.oid) LIKE '%state%ARRAY%'", table)
    assert len(definitions) == 1, definitions
    allowed = set(re.findall(r"'([a-z_]+)'::text", definitions[0][0]))
    assert allowed == {s.value for s in states.TABLES[table]}


async def test_every_state_column_has_its_enum(pool: asyncpg.Pool) -> None:
    tables = await pool.fetch("SELECT table_name FROM information_schema.columns "
                              "WHERE table_schema = 'public' AND column_name = 'state'")
    assert {r["table_name"] for r in tables} == set(states.TABLES)


_COMPARED = re.compile(
    r"\bstate\s*(?:=|<>|!=)\s*'([a-z_]+)'|\bstate\s+(?:NOT\s+)?IN\s*\(([^)]*)\)", re.IGNORECASE)


def test_the_queries_compare_states_that_exist() -> None:
    known = {s.value for enum in states.TABLES.values() for s in enum}
    # Migrations 0001 and 0002 hold the states 0002 dropped ('pending', 'parsing').
    files = [p for p in SRC.rglob("*.sql") if not p.name.startswith(("0001_", "0002_"))]
    used: dict[str, str] = {}
    for path in files:
        for single, listed in _COMPARED.findall(path.read_text()):
            for name in [single] if single else re.findall(r"'([a-z_]+)'", listed):
                used.setdefault(name, path.name)
    assert "queued" in used and "parsed" in used  # the pattern finds what it should
    assert {name: where for name, where in used.items() if name not in known} == {}
