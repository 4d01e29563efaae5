"""The store of open-access copies (issue 51, migration 0023): shared by every run, naming
none, and deleted by the operator's cleaner after the retention age with the bytes no
other work names."""

from __future__ import annotations

import hashlib

import asyncpg

from citerun.operator import cleaner

DAY = 24 * 3600.0


async def _work(pool: asyncpg.Pool, key: str, pdf: bytes | None, age_days: float) -> str | None:
    sha = hashlib.sha256(pdf).hexdigest() if pdf is not None else None
    if pdf is not None:
        await pool.execute("INSERT INTO fetched_contents (sha256, kind, content, size_bytes) "
                           "VALUES ($1, 'pdf', $2, $3) ON CONFLICT DO NOTHING", sha, pdf, len(pdf))
    await pool.execute(
        "INSERT INTO fetched_works (work_key, kind, pdf_sha256, found, fetched_at) "
        "VALUES ($1, $2, $3, '{}', now() - make_interval(days => $4))",
        key, "pdf" if pdf is not None else "none", sha, age_days)
    return sha


async def test_the_shared_tables_name_no_run_tenant_or_user(pool: asyncpg.Pool) -> None:
    columns = {(r["table_name"], r["column_name"]) for r in await pool.fetch(
        "SELECT table_name, column_name FROM information_schema.columns "
        "WHERE table_name IN ('fetched_works', 'fetched_contents')")}
    names = {column for _, column in columns}
    assert names == {"work_key", "kind", "pdf_sha256", "abstract_sha256", "found", "fetched_at",
                     "sha256", "content", "size_bytes", "stored_at"}
    assert not any(word in name for name in names
                   for word in ("run", "tenant", "owner", "user", "namespace"))


async def test_the_cleaner_forgets_old_works_and_the_bytes_no_work_names(
        pool: asyncpg.Pool) -> None:
    shared = b"%PDF-1.7 the same paper under two identifiers"
    old_only = await _work(pool, "doi:10.1/old", b"%PDF-1.7 an old paper", age_days=20)
    await _work(pool, "doi:10.1/old-twin", shared, age_days=20)
    await _work(pool, "arxiv:2101.00001", shared, age_days=2)  # the same bytes, recent
    await _work(pool, "doi:10.1/none", None, age_days=30)
    await _work(pool, "doi:10.1/recent", b"%PDF-1.7 a recent paper", age_days=1)

    result = await cleaner.Cleaner(pool, cleaner.CleanerConfig(batch_size=2)).run_once()

    left = {r["work_key"] for r in await pool.fetch("SELECT work_key FROM fetched_works")}
    assert left == {"arxiv:2101.00001", "doi:10.1/recent"}
    contents = {r["sha256"] for r in await pool.fetch("SELECT sha256 FROM fetched_contents")}
    assert old_only not in contents
    assert hashlib.sha256(shared).hexdigest() in contents  # a recent work still names it
    assert result.fetched == 3 + 1  # three works, one PDF's bytes


async def test_citerun_serve_forgets_them_after_web_keep_days(pool: asyncpg.Pool) -> None:
    """On one machine no operator's cleaner runs: the web service's expiry (the same
    keep_days as its runs) forgets the works and their unshared bytes."""
    from citerun.core.settings import Settings
    from citerun.web import deletion, store
    from citerun.web.backend import LocalBackend

    old = await _work(pool, "doi:10.1/forty-days", b"%PDF-1.7 forty days old", age_days=40)
    await _work(pool, "doi:10.1/ten-days", b"%PDF-1.7 ten days old", age_days=10)
    backend = LocalBackend(pool, Settings(), store.UserCaps(3, 10**9))
    await deletion.expire(pool, backend, keep_days=30)
    left = {r["work_key"] for r in await pool.fetch("SELECT work_key FROM fetched_works")}
    assert left == {"doi:10.1/ten-days"}
    assert not await pool.fetchval("SELECT count(*) FROM fetched_contents WHERE sha256 = $1", old)
