-- name: document_stage --
-- Stage a PDF's bytes under its digest; a document seen before keeps its state and bytes,
-- but for a refusal by other readers than these ($7, runs.PARSER_VERSION; NULL: refused
-- before versions were recorded, or its bytes went missing) that no running run holds:
-- staged again with its bytes, to be parsed again (issue 48).
-- The tenant ($5) owns the digest from now on, by upload or for a run ($6).
-- The bytes are $4, or, for a large document, NULL and the pieces the transaction wrote
-- under $8 (runs.PIECE_BYTES each, document_piece_insert), put together here and deleted.
WITH pieces AS (
    DELETE FROM document_pieces WHERE upload = $8::uuid RETURNING seq, piece
), retry AS (
    SELECT EXISTS (
        SELECT 1 FROM documents AS f
        WHERE f.digest = $1 AND f.state = 'failed' AND f.parser_version IS DISTINCT FROM $7::text
          AND NOT EXISTS (SELECT 1 FROM run_sources AS s JOIN runs AS r ON r.id = s.run_id
                          WHERE s.digest = f.digest AND r.state = 'running')) AS yes
), doc AS (
    INSERT INTO documents AS d (digest, filename, size_bytes, raw, tenant)
    VALUES ($1, $2, $3, COALESCE($4::bytea, (SELECT string_agg(piece, ''::bytea ORDER BY seq)
                                             FROM pieces)), $5)
    ON CONFLICT (digest) DO UPDATE
    SET raw = CASE WHEN (d.state = 'staged' AND d.raw IS NULL) OR (SELECT yes FROM retry)
                   THEN excluded.raw ELSE d.raw END,
        state = CASE WHEN (SELECT yes FROM retry) THEN 'staged' ELSE d.state END,
        error_reason = CASE WHEN (SELECT yes FROM retry) THEN NULL ELSE d.error_reason END,
        error = CASE WHEN (SELECT yes FROM retry) THEN NULL ELSE d.error END,
        finished_at = CASE WHEN (SELECT yes FROM retry) THEN NULL ELSE d.finished_at END,
        staged_at = CASE WHEN (SELECT yes FROM retry) THEN now() ELSE d.staged_at END,
        parser_version = CASE WHEN (SELECT yes FROM retry) THEN NULL ELSE d.parser_version END
    RETURNING digest, state
), owner AS (
    INSERT INTO document_owners (tenant, digest, size_bytes, via)
    SELECT $5, digest, $3, $6 FROM doc
    ON CONFLICT (tenant, digest) DO UPDATE
    SET owned_at = now(),
        via = CASE WHEN excluded.via = 'upload' THEN 'upload' ELSE document_owners.via END
)
SELECT state FROM doc;

-- name: document_piece_insert --
-- One piece of a large document being staged (see document_stage).
INSERT INTO document_pieces (upload, seq, piece) VALUES ($1, $2, $3);

-- name: run_insert --
-- Create a run; an existing run of the same id is left as it is (idempotent create).
INSERT INTO runs (id, name, namespace, tenant, generation, spec, priority, state,
                  resource_uid, max_tenant_bytes)
VALUES ($1, $2, $3, $4, $5, $6, $7, 'running', $8, $9)
ON CONFLICT (id) DO NOTHING
RETURNING id;

-- name: run_source_insert --
-- Attach one document (thesis or source) to a run, with its citation keys.
INSERT INTO run_sources (run_id, digest, role, filename, keys)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT DO NOTHING;

-- name: run_lock --
-- Lock a run's row: serialises the stage transitions of one run.
SELECT id, state, priority, tenant FROM runs WHERE id = $1 FOR UPDATE;

-- name: run_lock_by_documents --
-- Lock every running run that uses one of these documents, in a fixed order.
SELECT r.id, r.priority FROM runs AS r
WHERE r.state = 'running'
  AND EXISTS (SELECT 1 FROM run_sources AS s WHERE s.run_id = r.id AND s.digest = ANY($1::text[]))
ORDER BY r.id
FOR UPDATE OF r;

-- name: run_documents_pending --
-- Documents of a run that are not parsed or failed yet, and whether their bytes are here.
SELECT s.digest, d.state, d.raw IS NOT NULL AS has_bytes
FROM run_sources AS s JOIN documents AS d USING (digest)
WHERE s.run_id = $1 AND d.state NOT IN ('parsed', 'failed') AND s.error_reason IS NULL;

-- name: run_source_fail --
-- A document the run could not use for a reason of the moment: failed for this run only.
UPDATE run_sources SET error_reason = $3, error = $4
WHERE run_id = $1 AND digest = $2 AND error_reason IS NULL;

-- name: run_get --
-- One run.
SELECT id, name, namespace, resource_uid, tenant, generation, spec, state, priority, error,
       tokens_spent, skipped, created_at, updated_at, finished_at
FROM runs WHERE id = $1;

-- name: run_active_of_resource --
-- The unfinished runs of one CitationRun (any generation).
SELECT id FROM runs WHERE resource_uid = $1 AND state = 'running';

-- name: run_progress --
-- A run's state and counts: citations found, judged, and per verdict.
SELECT r.state, r.error, r.generation, r.tokens_spent,
       (SELECT count(*) FROM citations c WHERE c.run_id = r.id) AS citations,
       (SELECT count(*) FROM verdicts v WHERE v.run_id = r.id) AS judged,
       (SELECT coalesce(jsonb_object_agg(verdict, n), '{}') FROM
           (SELECT verdict, count(*) AS n FROM verdicts v WHERE v.run_id = r.id
            GROUP BY verdict) AS per) AS verdicts,
       (SELECT count(*) FROM tasks t WHERE t.run_id = r.id
          AND t.state IN ('queued', 'running')) AS tasks_open,
       (SELECT count(*) FROM run_sources s JOIN documents d USING (digest)
         WHERE s.run_id = r.id AND d.state IN ('parsed', 'failed')) AS documents_done,
       (SELECT count(*) FROM run_sources s WHERE s.run_id = r.id) AS documents
FROM runs AS r WHERE r.id = $1;

-- name: run_finish --
-- Move a running run to a terminal state and tell the listeners.
WITH done AS (
    UPDATE runs SET state = $2, error = $3, updated_at = now(), finished_at = now()
    WHERE id = $1 AND state = 'running'
    RETURNING id
)
SELECT pg_notify('citerun_runs', id::text) FROM done;

-- name: run_touch --
-- Bump a run's updated_at and tell the listeners that its progress changed.
WITH touched AS (UPDATE runs SET updated_at = now() WHERE id = $1 RETURNING id)
SELECT pg_notify('citerun_runs', id::text) FROM touched;

-- name: run_drop_staged_bytes --
-- Drop the staged bytes of a run's documents that no other active run still needs.
UPDATE documents AS d SET raw = NULL
WHERE d.raw IS NOT NULL
  AND d.digest IN (SELECT digest FROM run_sources WHERE run_id = $1)
  AND NOT EXISTS (SELECT 1 FROM run_sources s JOIN runs r ON r.id = s.run_id
                  WHERE s.digest = d.digest AND r.id <> $1 AND r.state = 'running')
RETURNING d.digest;

-- name: report_get --
-- A run's stored report.
SELECT json, html, created_at FROM reports WHERE run_id = $1;

-- name: run_tasks_open --
-- Whether a run has a queued or running task of one of the given kinds.
SELECT EXISTS (SELECT 1 FROM tasks WHERE run_id = $1 AND kind = ANY($2::text[])
               AND state IN ('queued', 'running'));

-- name: document_mark_failed --
-- Record why a document cannot be used and drop its staged bytes (a parsed one stays).
UPDATE documents
SET state = 'failed', raw = NULL, error_reason = $2, error = $3, finished_at = now(),
    parser_version = $4
WHERE digest = $1 AND state <> 'parsed';

-- name: tenant_admission_lock --
-- Serialise admissions of one tenant (held until the transaction ends).
SELECT pg_advisory_xact_lock(hashtextextended('citerun.admit:' || $1, 0));

-- name: tenant_usage --
-- A tenant's active runs and staged bytes, for admission.
SELECT (SELECT count(*) FROM runs WHERE tenant = $1 AND state = 'running')
           AS active_runs,
       (SELECT coalesce(sum(size_bytes), 0) FROM document_owners
         WHERE tenant = $1)::bigint AS staged_bytes;

-- name: run_active_with_resource --
-- Unfinished runs that belong to a CitationRun (for the orphan sweep).
SELECT id, namespace, name, resource_uid FROM runs
WHERE resource_uid IS NOT NULL AND state = 'running';

-- name: document_drop_expired_bytes --
-- The staging TTL: drop bytes staged longer than $1 seconds ago that no active run needs.
UPDATE documents AS d SET raw = NULL
WHERE d.raw IS NOT NULL AND d.staged_at < now() - make_interval(secs => $1)
  AND NOT EXISTS (SELECT 1 FROM run_sources s JOIN runs r ON r.id = s.run_id
                  WHERE s.digest = d.digest AND r.state = 'running')
RETURNING d.digest;

-- name: documents_owned --
-- Which of these digests tenant $1 owns (brought the bytes of itself).
SELECT digest FROM document_owners WHERE tenant = $1 AND digest = ANY($2::text[]);

-- name: documents_owned_touch --
-- A run of tenant $1 uses these owned digests: the staging TTL of an upload starts again.
UPDATE document_owners SET owned_at = now()
WHERE tenant = $1 AND digest = ANY($2::text[])
RETURNING digest;

-- name: run_secret_insert --
-- A run's own judge API key (deleted when the run finishes).
INSERT INTO run_secrets (run_id, judge_api_key) VALUES ($1, $2) ON CONFLICT DO NOTHING;

-- name: run_secret_delete --
DELETE FROM run_secrets WHERE run_id = $1;

-- name: run_release_documents --
-- A finished run's tenant stops owning the documents the run brought ('run' ownership)
-- that no other active run of the tenant uses; returns them for documents_erase_unowned.
WITH run AS (SELECT id, tenant FROM runs WHERE id = $1)
DELETE FROM document_owners AS o USING run
WHERE o.tenant = run.tenant AND o.via = 'run'
  AND o.digest IN (SELECT digest FROM run_sources WHERE run_id = run.id)
  AND NOT EXISTS (SELECT 1 FROM run_sources AS s JOIN runs AS r ON r.id = s.run_id
                  WHERE s.digest = o.digest AND r.tenant = run.tenant AND r.id <> run.id
                    AND r.state = 'running')
RETURNING o.digest;

-- name: owners_expire_uploads --
-- The staging TTL of uploads: ownership by upload unused for $1 seconds, with no active
-- run of the tenant using the document, ends; returns the digests.
DELETE FROM document_owners AS o
WHERE o.via = 'upload' AND o.owned_at < now() - make_interval(secs => $1)
  AND NOT EXISTS (SELECT 1 FROM run_sources AS s JOIN runs AS r ON r.id = s.run_id
                  WHERE s.digest = o.digest AND r.tenant = o.tenant
                    AND r.state = 'running')
RETURNING o.digest;

-- name: documents_erase_unowned --
-- Of these documents, those no tenant owns and no active run uses lose their bytes, pages
-- and chunks and go back to 'staged' (a later owner re-uploads the bytes and it is parsed
-- again); a failed document stays failed.
WITH orphans AS (
    SELECT d.digest FROM documents AS d
    WHERE d.digest = ANY($1::text[])
      AND NOT EXISTS (SELECT 1 FROM document_owners AS o WHERE o.digest = d.digest)
      AND NOT EXISTS (SELECT 1 FROM run_sources AS s JOIN runs AS r ON r.id = s.run_id
                      WHERE s.digest = d.digest AND r.state = 'running')
),
pages AS (DELETE FROM document_pages WHERE digest IN (SELECT digest FROM orphans)),
chunk_rows AS (DELETE FROM chunks WHERE digest IN (SELECT digest FROM orphans))
UPDATE documents AS d
SET raw = NULL, state = CASE WHEN d.state = 'failed' THEN 'failed' ELSE 'staged' END,
    title = NULL, authors = '{}', year = NULL, page_count = NULL, finished_at = NULL
WHERE d.digest IN (SELECT digest FROM orphans)
RETURNING d.digest;
