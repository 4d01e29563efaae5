"""The verdicts.verdict CHECK of the migrated schema allows exactly citerun.core.verdicts."""

from __future__ import annotations

import re

import asyncpg

from citerun.core import verdicts


async def test_the_sql_check_allows_exactly_the_enum(pool: asyncpg.Pool) -> None:
    definition = await pool.fetchval(
        "SELECT pg_get_constraintdef(c.oid) FROM pg_constraint c "
        "JOIN pg_class t ON t.oid = c.conrelid "
        "WHERE t.relname = 'verdicts' AND c.contype = 'c' "
        "AND pg_get_constraintdef(c.oid) LIKE '%verdict%ARRAY%'")
    assert definition is not None
    assert set(re.findall(r"'([a-z_]+)'::text", definition)) == {v.value for v in verdicts.Verdict}
