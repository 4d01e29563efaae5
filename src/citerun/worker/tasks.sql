-- name: document_claim_bytes --
-- A document's bytes and state, for parsing.
SELECT digest, filename, state, raw FROM documents WHERE digest = $1;

-- name: document_mark_parsed --
-- Record a parsed document's metadata and drop its staged bytes.
UPDATE documents
SET state = 'parsed', raw = NULL, title = $2, authors = $3, year = $4, page_count = $5,
    doi = $6, arxiv_id = $7, written = $8, error = NULL, error_reason = NULL,
    finished_at = now()
WHERE digest = $1 AND state <> 'parsed';

-- name: document_page_insert --
-- Store the cleaned text of one page, its size, line boxes and rendering.
INSERT INTO document_pages (digest, number, text, width, height, lines, image, label, ocr)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT DO NOTHING;

-- name: chunk_insert --
-- Store one chunk with its embedding and the model and width that made it.
INSERT INTO chunks (digest, ordinal, page_start, page_end, text, embedding, embedding_model,
                    embedding_dim)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (digest, ordinal) DO NOTHING;

-- name: run_documents --
-- The documents of a run with their role, keys and parse outcome.
SELECT s.digest, s.role, s.filename, s.keys,
       CASE WHEN s.error_reason IS NOT NULL AND d.state <> 'parsed' THEN 'failed'
            ELSE d.state END AS state,
       d.title, d.authors, d.year, d.doi, d.arxiv_id, d.page_count,
       coalesce(s.error_reason, d.error_reason) AS error_reason,
       coalesce(s.error, d.error) AS error,
       d.written ->> 'format' AS written_format,
       (SELECT count(*) FROM document_pages AS p WHERE p.digest = s.digest AND p.ocr) AS ocr_pages
FROM run_sources AS s JOIN documents AS d USING (digest)
WHERE s.run_id = $1 ORDER BY s.role DESC, s.filename;

-- name: document_written --
-- What a thesis from the writer's files states (NULL for a PDF).
SELECT written FROM documents WHERE digest = $1;

-- name: run_set_skipped --
-- What the extraction of the run's thesis did not take, with the reasons.
UPDATE runs SET skipped = $2 WHERE id = $1;

-- name: document_pages_all --
-- Every page of a document, in order.
SELECT number, text FROM document_pages WHERE digest = $1 ORDER BY number;

-- name: document_first_page --
-- The text of a document's first page: where a cited work shows its title and abstract.
SELECT text FROM document_pages WHERE digest = $1 AND number = 1;

-- name: citation_insert --
-- Store one (claim, cited key) of a run.
INSERT INTO citations (run_id, ordinal, key, marker, claim, page, locator, digest, reference,
                       match_method, match_score, match_reason, location, work_key)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
ON CONFLICT (run_id, ordinal) DO UPDATE SET ordinal = excluded.ordinal
RETURNING id;

-- name: citation_get --
-- One citation with its run and source document state, and the web user whose run it
-- is (null: not a web run).
SELECT c.id, c.run_id, c.claim, c.digest, d.state AS document_state, r.spec, r.priority,
       r.state AS run_state, r.tokens_spent, r.tenant,
       (SELECT w.owner FROM web_runs AS w WHERE w.run_id = c.run_id) AS web_owner,
       (SELECT f.status FROM run_fetches AS f
        WHERE f.run_id = c.run_id AND f.work_key = c.work_key) AS fetched
FROM citations AS c JOIN runs AS r ON r.id = c.run_id
LEFT JOIN documents AS d ON d.digest = c.digest
WHERE c.id = $1;

-- name: citation_source_file --
-- The file name the run gave a citation's source (NULL: no source mapped).
SELECT c.id, s.filename FROM citations AS c
LEFT JOIN run_sources AS s ON s.run_id = c.run_id AND s.digest = c.digest
WHERE c.id = $1;

-- name: verdict_insert --
-- Record a citation's verdict (the first one recorded wins).
INSERT INTO verdicts (citation_id, run_id, verdict, confidence, rationale, evidence, judge)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (citation_id) DO NOTHING;

-- name: verdict_copy_same_pair --
-- The verdict of citation $1 recorded for the run's other citations of the same claim
-- and source that have none yet (identical work is judged once per run).
INSERT INTO verdicts (citation_id, run_id, verdict, confidence, rationale, evidence, judge)
SELECT o.id, v.run_id, v.verdict, v.confidence, v.rationale, v.evidence, v.judge
FROM verdicts AS v
JOIN citations AS c ON c.id = v.citation_id
JOIN citations AS o ON o.run_id = c.run_id AND o.digest = c.digest AND o.claim = c.claim
                    AND o.id <> c.id
WHERE v.citation_id = $1
  AND NOT EXISTS (SELECT 1 FROM verdicts w WHERE w.citation_id = o.id)
ON CONFLICT (citation_id) DO NOTHING;

-- name: tenant_profile_tokens --
-- Tokens tenant $1 spent on judge profile $2 in the current period $3 (day, week, month;
-- UTC calendar): charged to the day they were spent (run_add_tokens), whenever the run
-- was created and whether or not it still exists (issue 48).
SELECT coalesce(sum(tokens), 0) FROM judge_spend
WHERE tenant = $1 AND profile = $2
  AND day >= date_trunc($3, now() AT TIME ZONE 'UTC')::date;

-- name: run_unjudged_count --
-- Citations of a run without a verdict yet.
SELECT count(*) FROM citations AS c
WHERE c.run_id = $1 AND NOT EXISTS (SELECT 1 FROM verdicts v WHERE v.citation_id = c.id);

-- name: run_add_tokens --
-- Add judge tokens to a run's spent count, and charge them to its tenant's spend on the
-- run's judge profile today (UTC; read by tenant_profile_tokens).
WITH run AS (
    UPDATE runs SET tokens_spent = tokens_spent + $2 WHERE id = $1 RETURNING tenant, spec
)
INSERT INTO judge_spend AS s (tenant, profile, day, tokens)
SELECT tenant, coalesce(spec #>> '{judge,openai,profile}', 'default'),
       (now() AT TIME ZONE 'UTC')::date, $2
FROM run WHERE spec #>> '{judge,kind}' = 'openai'
ON CONFLICT (tenant, profile, day) DO UPDATE SET tokens = s.tokens + excluded.tokens;

-- name: run_report_rows --
-- Every citation of a run with its verdict, in reading order. Its source's name is the
-- run's (run_documents), not the shared document row's.
SELECT c.id, c.ordinal, c.key, c.marker, c.claim, c.page, c.locator, c.location, c.digest,
       c.reference, c.match_method, c.match_score, c.match_reason,
       v.verdict, v.confidence, v.rationale, v.evidence, v.judge
FROM citations AS c
LEFT JOIN verdicts AS v ON v.citation_id = c.id
WHERE c.run_id = $1 ORDER BY c.ordinal;

-- name: report_insert --
-- Store a run's report.
INSERT INTO reports (run_id, json, html) VALUES ($1, $2, $3)
ON CONFLICT (run_id) DO UPDATE SET json = excluded.json, html = excluded.html,
    created_at = now();

-- name: run_judge_key --
-- The run's own judge API key, if the operator stored one (spec apiKeySecretRef).
SELECT judge_api_key FROM run_secrets WHERE run_id = $1;

-- name: document_pages_evidence --
-- The size, line boxes and rendering of the given pages of a document.
SELECT number, width, height, lines, image, label FROM document_pages
WHERE digest = $1 AND number = ANY($2::int[]) ORDER BY number;

-- name: document_pages_labelled --
-- Every page of a document with its printed label, for checking quotations.
SELECT number, coalesce(label, number::text) AS label, text FROM document_pages
WHERE digest = $1 ORDER BY number;

-- name: run_fetches --
-- The cited works without a PDF a run looked for (issue 51), with what each got.
SELECT work_key, label, reference, ids, status, digest, found, error FROM run_fetches
WHERE run_id = $1 ORDER BY label, work_key;
