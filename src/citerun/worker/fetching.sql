-- name: run_source_attach --
-- Attach a downloaded document to its run.
INSERT INTO run_sources (run_id, digest, role, filename, keys) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT DO NOTHING;

-- name: tenant_over_byte_cap --
-- Whether $2 more bytes (a download of run $1) would take the run's tenant over the byte
-- cap the operator admitted the run with (NULL cap: never). Bytes the tenant already
-- owns under digest $3 are not new.
SELECT r.max_tenant_bytes IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM document_owners WHERE tenant = r.tenant AND digest = $3)
       AND (SELECT coalesce(sum(size_bytes), 0) FROM document_owners WHERE tenant = r.tenant)
           + $2 > r.max_tenant_bytes
FROM runs AS r WHERE r.id = $1;

-- name: document_record_failure --
-- Record a document that could not be obtained at all (its digest names the URL).
INSERT INTO documents (digest, filename, size_bytes, state, error_reason, error, tenant,
                       finished_at)
VALUES ($1, $2, 0, 'failed', $3, $4, (SELECT tenant FROM runs WHERE id = $5), now())
ON CONFLICT (digest) DO UPDATE SET error = excluded.error, error_reason = excluded.error_reason;

-- name: run_fetch_want --
-- A cited work run $1 looks for (issue 51): its key, the thesis's label and reference for
-- it, its identifiers. One row per (run, work), whatever the number of its citations.
INSERT INTO run_fetches (run_id, work_key, label, reference, ids) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT DO NOTHING;

-- name: run_fetch_get --
-- What run $1 looks for under key $2, with the run's state, tenant and priority.
SELECT f.work_key, f.label, f.reference, f.ids, f.status, r.state AS run_state, r.tenant,
       r.priority
FROM run_fetches AS f JOIN runs AS r ON r.id = f.run_id
WHERE f.run_id = $1 AND f.work_key = $2;

-- name: run_fetch_done --
-- The look-up of run $1's work $2 ended: its status, the document read ($4, null when
-- nothing was), the Found JSON as this run used it ($5) and why it failed ($6).
UPDATE run_fetches SET status = $3, digest = $4, found = $5, error = $6, finished_at = now()
WHERE run_id = $1 AND work_key = $2 AND status = 'pending'
RETURNING work_key;

-- name: fetched_work_get --
-- The shared copy of a work (any run's), with the bytes of its PDF and its abstract.
SELECT w.kind, w.found, w.fetched_at, p.content AS pdf, a.content AS abstract,
       w.fetched_at > now() - make_interval(secs => $2) AS fresh
FROM fetched_works AS w
LEFT JOIN fetched_contents AS p ON p.sha256 = w.pdf_sha256
LEFT JOIN fetched_contents AS a ON a.sha256 = w.abstract_sha256
WHERE w.work_key = $1;

-- name: fetched_content_put --
-- Bytes a service gave (a PDF, an abstract's text), once by their sha256.
INSERT INTO fetched_contents (sha256, kind, content, size_bytes) VALUES ($1, $2, $3, $4)
ON CONFLICT (sha256) DO NOTHING;

-- name: fetched_work_put --
-- What the services had for a work, shared by every later run; a new look-up replaces it.
INSERT INTO fetched_works (work_key, kind, pdf_sha256, abstract_sha256, found)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (work_key) DO UPDATE
SET kind = excluded.kind, pdf_sha256 = excluded.pdf_sha256,
    abstract_sha256 = excluded.abstract_sha256, found = excluded.found, fetched_at = now();

-- name: document_state --
-- A document's state (null: never staged).
SELECT state FROM documents WHERE digest = $1;

-- name: citations_waiting --
-- The citations of run $1 that wait for work $2 (no verdict yet), in reading order.
SELECT c.id, c.marker, c.claim, c.reference FROM citations AS c
WHERE c.run_id = $1 AND c.work_key = $2
  AND NOT EXISTS (SELECT 1 FROM verdicts AS v WHERE v.citation_id = c.id)
ORDER BY c.ordinal;

-- name: citations_found --
-- The citations of run $1 waiting for work $2 now map to the document read ($3), for the
-- reason $4; returns them, the first of each claim first.
UPDATE citations AS c SET digest = $3, match_method = 'fetched', match_score = NULL,
                          match_reason = $4
WHERE c.run_id = $1 AND c.work_key = $2
  AND NOT EXISTS (SELECT 1 FROM verdicts AS v WHERE v.citation_id = c.id)
RETURNING c.id, c.claim, c.ordinal;

-- name: verdict_insert --
-- Record a citation's verdict (the first one recorded wins).
INSERT INTO verdicts (citation_id, run_id, verdict, confidence, rationale, evidence, judge)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (citation_id) DO NOTHING;

-- name: run_unjudged_count --
-- Citations of a run without a verdict yet.
SELECT count(*) FROM citations AS c
WHERE c.run_id = $1 AND NOT EXISTS (SELECT 1 FROM verdicts v WHERE v.citation_id = c.id);
