-- name: web_owner_lock --
-- Serialise one user's admissions (their caps are counted after this lock).
SELECT pg_advisory_xact_lock(hashtextextended('citerun-web:' || $1, 0));

-- name: web_run_insert --
-- Record who submitted a run (in the transaction that creates it).
INSERT INTO web_runs (run_id, owner) VALUES ($1, $2);

-- name: web_usage --
-- One user's running runs and the staged bytes their documents hold (each digest once).
SELECT (SELECT count(*) FROM web_runs AS w JOIN runs AS r ON r.id = w.run_id
        WHERE w.owner = $1 AND r.state = 'running') AS active_runs,
       (SELECT coalesce(sum(d.size_bytes), 0) FROM documents AS d
        WHERE d.raw IS NOT NULL AND d.digest IN (
            SELECT s.digest FROM web_runs AS w JOIN runs AS r ON r.id = w.run_id
            JOIN run_sources AS s ON s.run_id = w.run_id
            WHERE w.owner = $1 AND r.state = 'running')) AS staged_bytes;

-- name: web_run_owned --
-- A run of this user (no row: another user's run, or no run at all).
SELECT r.id, r.name, r.state, r.error, r.spec, r.created_at, r.finished_at
FROM web_runs AS w JOIN runs AS r ON r.id = w.run_id
WHERE w.run_id = $1 AND w.owner = $2;

-- name: web_runs_of_owner --
-- A user's runs, the newest first, with their counts.
SELECT r.id, r.name, r.state, r.error, r.created_at, r.finished_at,
       (SELECT count(*) FROM run_sources AS s WHERE s.run_id = r.id) AS documents,
       (SELECT count(*) FROM citations AS c WHERE c.run_id = r.id) AS citations,
       (SELECT count(*) FROM verdicts AS v WHERE v.run_id = r.id) AS judged
FROM web_runs AS w JOIN runs AS r ON r.id = w.run_id
WHERE w.owner = $1
ORDER BY w.created_at DESC, r.id
LIMIT $2;

-- name: web_run_documents --
-- The documents of one run (thesis first), with their state.
SELECT s.digest, s.role, s.filename, d.state, s.error_reason
FROM run_sources AS s JOIN documents AS d USING (digest)
WHERE s.run_id = $1
ORDER BY s.role DESC, s.filename;

-- name: web_document_owned --
-- A document one of this user's runs uses (no row otherwise), without its bytes.
SELECT d.digest, d.filename, d.size_bytes, d.state, d.error_reason, d.title, d.year,
       d.page_count
FROM documents AS d
WHERE d.digest = $1 AND EXISTS (
    SELECT 1 FROM web_runs AS w JOIN run_sources AS s ON s.run_id = w.run_id
    WHERE w.owner = $2 AND s.digest = $1);

-- name: web_key_insert --
-- Store a secret key unless one of that name exists (the first replica's wins).
INSERT INTO web_keys (name, secret) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING;

-- name: web_key_get --
-- A secret key.
SELECT secret FROM web_keys WHERE name = $1;
