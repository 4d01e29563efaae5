-- name: task_delete_finished_batch --
-- Delete up to $2 finished tasks that finished over $1 seconds ago and whose run (if any)
-- is finished too (a live run's finished tasks still hold the dedupe keys that keep its
-- transitions from repeating). Locked rows are skipped: never waits on a claim.
WITH doomed AS (
    SELECT t.id FROM tasks AS t
    WHERE t.state IN ('succeeded', 'failed', 'cancelled')
      AND t.finished_at < now() - make_interval(secs => $1)
      AND (t.run_id IS NULL OR NOT EXISTS (
              SELECT 1 FROM runs AS r WHERE r.id = t.run_id AND r.state = 'running'))
    ORDER BY t.finished_at
    LIMIT $2
    FOR UPDATE OF t SKIP LOCKED
)
DELETE FROM tasks AS t USING doomed WHERE t.id = doomed.id
RETURNING t.id;

-- name: run_finished_batch --
-- Up to $2 runs that finished over $1 seconds ago, oldest first, with their resource.
SELECT id, namespace, name, resource_uid FROM runs
WHERE state IN ('succeeded', 'failed', 'cancelled')
  AND finished_at < now() - make_interval(secs => $1)
ORDER BY finished_at
LIMIT $2;

-- name: run_delete_many --
-- Delete finished runs (their citations, verdicts, report, sources and tasks go with
-- them by cascade); a row locked by someone else is skipped for the next round.
WITH doomed AS (
    SELECT id FROM runs
    WHERE id = ANY($1::uuid[]) AND state IN ('succeeded', 'failed', 'cancelled')
    FOR UPDATE SKIP LOCKED
)
DELETE FROM runs AS r USING doomed WHERE r.id = doomed.id
RETURNING r.id;

-- name: document_drop_bytes_of_finished_batch --
-- Drop the staged bytes of up to $1 documents whose runs all finished over $2 seconds
-- ago (no active run needs them); a document no run uses is left to the staging TTL.
WITH doomed AS (
    SELECT d.digest FROM documents AS d
    WHERE d.raw IS NOT NULL
      AND EXISTS (SELECT 1 FROM run_sources AS s WHERE s.digest = d.digest)
      AND NOT EXISTS (SELECT 1 FROM run_sources AS s JOIN runs AS r ON r.id = s.run_id
                      WHERE s.digest = d.digest
                        AND (r.state = 'running'
                             OR r.finished_at > now() - make_interval(secs => $2)))
    LIMIT $1
    FOR UPDATE OF d SKIP LOCKED
)
UPDATE documents AS d SET raw = NULL FROM doomed WHERE d.digest = doomed.digest
RETURNING d.digest;

-- name: worker_delete_gone_batch --
-- Forget up to $2 workers that stopped, or stopped heartbeating, over $1 seconds ago.
WITH doomed AS (
    SELECT id FROM workers
    WHERE heartbeat_at < now() - make_interval(secs => $1)
    LIMIT $2
    FOR UPDATE SKIP LOCKED
)
DELETE FROM workers AS w USING doomed WHERE w.id = doomed.id
RETURNING w.id;

-- name: fetched_work_delete_old_batch --
-- Forget up to $2 works the open-access services were asked about (issue 51) over $1
-- seconds ago: a later run asks again. The runs' own copies (run_fetches) stay with the
-- runs, which retention deletes by their own age.
WITH doomed AS (
    SELECT work_key FROM fetched_works
    WHERE fetched_at < now() - make_interval(secs => $1)
    ORDER BY fetched_at
    LIMIT $2
    FOR UPDATE SKIP LOCKED
)
DELETE FROM fetched_works AS w USING doomed WHERE w.work_key = doomed.work_key
RETURNING w.work_key;

-- name: fetched_content_delete_unused_batch --
-- Delete up to $1 fetched PDFs and abstracts that no stored work names any more.
WITH doomed AS (
    SELECT c.sha256 FROM fetched_contents AS c
    WHERE NOT EXISTS (SELECT 1 FROM fetched_works AS w
                      WHERE w.pdf_sha256 = c.sha256 OR w.abstract_sha256 = c.sha256)
    LIMIT $1
    FOR UPDATE SKIP LOCKED
)
DELETE FROM fetched_contents AS c USING doomed WHERE c.sha256 = doomed.sha256
RETURNING c.sha256;
