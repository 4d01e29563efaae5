-- name: web_owner_lock --
-- Serialise one user's admissions (their caps are counted after this lock).
SELECT pg_advisory_xact_lock(hashtextextended('citerun-web:' || $1, 0));

-- name: web_run_insert --
-- Record who submitted a run (in the transaction that creates it).
INSERT INTO web_runs (run_id, owner) VALUES ($1, $2);

-- name: web_usage --
-- One user's running runs and the staged bytes their documents hold (each digest once).
-- A submission whose run the operator has not created yet counts as running, with the
-- documents it staged.
SELECT (SELECT count(*) FROM web_runs AS w LEFT JOIN runs AS r ON r.id = w.run_id
        WHERE w.owner = $1 AND (r.state = 'running'
                                OR (r.id IS NULL AND w.closed_state IS NULL))) AS active_runs,
       (SELECT coalesce(sum(d.size_bytes), 0) FROM documents AS d
        WHERE d.raw IS NOT NULL AND d.digest IN (
            SELECT s.digest FROM web_runs AS w JOIN runs AS r ON r.id = w.run_id
            JOIN run_sources AS s ON s.run_id = w.run_id
            WHERE w.owner = $1 AND r.state = 'running'
            UNION
            SELECT unnest(w.digests) FROM web_runs AS w LEFT JOIN runs AS r ON r.id = w.run_id
            WHERE w.owner = $1 AND r.id IS NULL AND w.closed_state IS NULL)) AS staged_bytes;

-- name: web_run_owned --
-- A run of this user (no row: another user's run, or no run at all). Before the operator
-- creates the run of a CitationRun the row alone answers: running (waiting), unless the
-- submission was closed; pending says so.
SELECT w.run_id AS id, coalesce(w.name, r.name) AS name,
       coalesce(r.state, coalesce(w.closed_state, 'running')) AS state,
       coalesce(r.error, w.closed_error) AS error, r.spec,
       coalesce(r.created_at, w.created_at) AS created_at, r.finished_at,
       w.namespace, w.resource_name, r.id IS NULL AS pending
FROM web_runs AS w LEFT JOIN runs AS r ON r.id = w.run_id
WHERE w.run_id = $1 AND w.owner = $2;

-- name: web_runs_listed --
-- A user's ($1) runs, the newest first, with their owner and counts (the verdicts per
-- verdict): the runs they own
-- ($3 = 'owner') or those others shared with them ($3 = 'reader'). A submission the
-- operator has not admitted yet is running, with no counts. Each branch of "listed" is an
-- index scan that $3 switches off as a whole, in a generic plan too.
WITH listed AS (
    SELECT run_id FROM web_runs WHERE $3::text = 'owner' AND owner = $1
    UNION ALL
    SELECT run_id FROM web_shares WHERE $3::text = 'reader' AND reader = $1)
SELECT w.run_id AS id, coalesce(w.name, r.name) AS name, w.owner,
       coalesce(r.state, coalesce(w.closed_state, 'running')) AS state,
       coalesce(r.error, w.closed_error) AS error,
       coalesce(r.created_at, w.created_at) AS created_at, r.finished_at,
       r.id IS NULL AS pending,
       coalesce((SELECT d.title FROM run_sources AS s JOIN documents AS d USING (digest)
                 WHERE s.run_id = w.run_id AND s.role = 'thesis' LIMIT 1),
                (SELECT p.json -> 'thesis' ->> 'title' FROM reports AS p
                 WHERE p.run_id = w.run_id)) AS title,
       (SELECT s.filename FROM run_sources AS s
        WHERE s.run_id = w.run_id AND s.role = 'thesis' LIMIT 1) AS filename,
       (SELECT count(*) FROM run_sources AS s WHERE s.run_id = w.run_id) AS documents,
       (SELECT count(*) FROM citations AS c WHERE c.run_id = w.run_id) AS citations,
       (SELECT count(*) FROM verdicts AS v WHERE v.run_id = w.run_id) AS judged,
       (SELECT coalesce(jsonb_object_agg(per.verdict, per.n), '{}') FROM
           (SELECT v.verdict, count(*) AS n FROM verdicts AS v WHERE v.run_id = w.run_id
            GROUP BY v.verdict) AS per) AS verdicts
FROM listed JOIN web_runs AS w USING (run_id) LEFT JOIN runs AS r ON r.id = w.run_id
ORDER BY w.created_at DESC, w.run_id
LIMIT $2;

-- name: web_run_documents --
-- The documents of one run (thesis first), with their state. A finished run's uploads
-- are erased (back to 'staged', documents_erase_unowned), so read_for_run says whether
-- this run read it: the run succeeded (a document it could not read has error_reason),
-- or its parse task for this run succeeded.
SELECT s.digest, s.role, s.filename, d.state, s.error_reason,
       s.error_reason IS NULL AND (r.state = 'succeeded' OR EXISTS (
           SELECT 1 FROM tasks AS t
           WHERE t.run_id = s.run_id AND t.kind = 'parse_document'
             AND t.state = 'succeeded' AND t.payload ->> 'digest' = s.digest))
           AS read_for_run
FROM run_sources AS s JOIN documents AS d USING (digest) JOIN runs AS r ON r.id = s.run_id
WHERE s.run_id = $1
ORDER BY s.role DESC, s.filename;

-- name: web_document_owned --
-- A document one of this user's runs uses (no row otherwise), without its bytes.
SELECT d.digest, d.filename, d.size_bytes, d.state, d.error_reason, d.title, d.year,
       d.page_count
FROM documents AS d
WHERE d.digest = $1 AND EXISTS (
    SELECT 1 FROM web_runs AS w JOIN run_sources AS s ON s.run_id = w.run_id
    WHERE w.owner = $2 AND s.digest = $1
    UNION ALL
    SELECT 1 FROM web_runs AS w WHERE w.owner = $2 AND $1 = ANY(w.digests));

-- name: web_key_insert --
-- Store a secret key unless one of that name exists (the first replica's wins).
INSERT INTO web_keys (name, secret) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING;

-- name: web_key_get --
-- A secret key.
SELECT secret FROM web_keys WHERE name = $1;

-- name: web_namespace_lock --
-- Serialise the service's staging and taking back of uploads in one namespace (tenant).
SELECT pg_advisory_xact_lock(hashtextextended('citerun-web-ns:' || $1, 0));

-- name: web_owned_by_tenant --
-- Which of these digests the tenant owns already (before an upload stages them).
SELECT digest FROM document_owners WHERE tenant = $1 AND digest = ANY($2::text[]);

-- name: web_submission_insert --
-- Record a user's upload for a CitationRun still to be created ($1 is a placeholder id
-- until the resource's uid is known).
INSERT INTO web_runs (run_id, owner, namespace, resource_name, name, digests, fresh_digests)
VALUES ($1, $2, $3, $4, $5, $6, $7);

-- name: web_submission_created --
-- The CitationRun exists: the row takes the run's id (the resource's uid).
UPDATE web_runs SET run_id = $2 WHERE run_id = $1 AND namespace IS NOT NULL;

-- name: web_submission_delete --
-- The CitationRun could not be created: the upload is not the user's after all.
DELETE FROM web_runs WHERE run_id = $1 AND namespace IS NOT NULL RETURNING fresh_digests;

-- name: web_submission_close --
-- A submission that never became a run: cancelled or failed for good ($2, $3).
UPDATE web_runs AS w SET closed_state = $2, closed_error = $3
WHERE w.run_id = $1 AND w.namespace IS NOT NULL AND w.closed_state IS NULL
  AND NOT EXISTS (SELECT 1 FROM runs AS r WHERE r.id = w.run_id)
RETURNING w.namespace, w.fresh_digests;

-- name: web_pending_of_owner --
-- A user's submissions whose run does not exist yet (and that are not closed), with their
-- age in seconds.
SELECT w.run_id, w.namespace, w.resource_name,
       extract(epoch FROM now() - w.created_at)::float8 AS age_s
FROM web_runs AS w LEFT JOIN runs AS r ON r.id = w.run_id
WHERE w.owner = $1 AND w.namespace IS NOT NULL AND r.id IS NULL AND w.closed_state IS NULL;

-- name: web_release_uploads --
-- Take back the namespace's ownership of digests an upload staged first ($2), unless a
-- running run of the tenant or another open submission there (not $3, the one let go)
-- uses them; returns the digests released.
DELETE FROM document_owners AS o
WHERE o.tenant = $1 AND o.via = 'upload' AND o.digest = ANY($2::text[])
  AND NOT EXISTS (SELECT 1 FROM run_sources AS s JOIN runs AS r ON r.id = s.run_id
                  WHERE s.digest = o.digest AND r.tenant = o.tenant AND r.state = 'running')
  AND NOT EXISTS (SELECT 1 FROM web_runs AS w LEFT JOIN runs AS r ON r.id = w.run_id
                  WHERE w.namespace = o.tenant AND w.run_id <> $3 AND r.id IS NULL
                    AND w.closed_state IS NULL AND o.digest = ANY(w.digests))
RETURNING o.digest;

-- name: web_resource_of --
-- The CitationRun of a submission (no row: a run of the service's own database).
SELECT namespace, resource_name, created_at FROM web_runs
WHERE run_id = $1 AND namespace IS NOT NULL;

-- name: web_run_readable --
-- A run this user may read: their own, or one its owner shared with them (no row
-- otherwise: another user's run, or no run at all). owner says whose it is.
SELECT w.run_id AS id, coalesce(w.name, r.name) AS name,
       coalesce(r.state, coalesce(w.closed_state, 'running')) AS state,
       coalesce(r.error, w.closed_error) AS error, r.spec,
       coalesce(r.created_at, w.created_at) AS created_at, r.finished_at,
       w.namespace, w.resource_name, r.id IS NULL AS pending, w.owner
FROM web_runs AS w LEFT JOIN runs AS r ON r.id = w.run_id
WHERE w.run_id = $1 AND (w.owner = $2 OR EXISTS (
    SELECT 1 FROM web_shares AS g WHERE g.run_id = w.run_id AND g.reader = $2));

-- name: web_share_lock --
-- Lock a run of this owner ($2) before web_share_insert in the same transaction: shares
-- of one run at once then count its readers one after another, each in a snapshot taken
-- after the one before it committed (a lock in the insert itself would wait, then count
-- in the snapshot it took before waiting). No row: not the owner's run. NO KEY UPDATE:
-- it leaves the foreign keys' checks (KEY SHARE) alone.
SELECT w.run_id FROM web_runs AS w WHERE w.run_id = $1 AND w.owner = $2
FOR NO KEY UPDATE;

-- name: web_share_insert --
-- Grant a reader access to a run of this owner ($2) that has fewer than $4 readers (or
-- has this one already); no row: not the owner's run, or too many readers. Run after
-- web_share_lock, in its transaction.
INSERT INTO web_shares (run_id, reader)
SELECT w.run_id, $3 FROM web_runs AS w
WHERE w.run_id = $1 AND w.owner = $2
  AND ((SELECT count(*) FROM web_shares AS g WHERE g.run_id = $1) < $4
       OR EXISTS (SELECT 1 FROM web_shares AS g WHERE g.run_id = $1 AND g.reader = $3))
ON CONFLICT (run_id, reader) DO UPDATE SET reader = excluded.reader
RETURNING reader;

-- name: web_share_delete --
-- Take a reader's access back ($2 is the run's owner); the reader removed, if any.
DELETE FROM web_shares AS g USING web_runs AS w
WHERE g.run_id = $1 AND g.reader = $3 AND w.run_id = g.run_id AND w.owner = $2
RETURNING g.reader;

-- name: web_shares_of_run --
-- Who may read one run (the caller checked it is the owner's).
SELECT reader, created_at FROM web_shares WHERE run_id = $1 ORDER BY reader;

-- name: web_run_stage --
-- What a run's workers are doing now: its open tasks per kind, how many are claimed and
-- for how long the oldest claimed one has run, in seconds.
SELECT kind, count(*) FILTER (WHERE state = 'running') AS running,
       count(*) FILTER (WHERE state = 'queued') AS queued,
       coalesce(extract(epoch FROM now() - min(claimed_at) FILTER (WHERE state = 'running')),
                0)::float8 AS running_s
FROM tasks WHERE run_id = $1 AND state IN ('queued', 'running')
GROUP BY kind;

-- name: web_thesis_title --
-- The title read from a run's thesis (NULL until it is read, or when it has none), or
-- the one its report kept.
SELECT coalesce((SELECT d.title FROM run_sources AS s JOIN documents AS d USING (digest)
                 WHERE s.run_id = $1 AND s.role = 'thesis' LIMIT 1),
                (SELECT p.json -> 'thesis' ->> 'title' FROM reports AS p
                 WHERE p.run_id = $1));

-- name: web_run_digests --
-- The documents of one run of this owner ($2): those of its run, and those its
-- submission staged (a CitationRun the operator never admitted).
SELECT s.digest FROM run_sources AS s JOIN web_runs AS w ON w.run_id = s.run_id
WHERE w.run_id = $1 AND w.owner = $2
UNION
SELECT unnest(w.digests) FROM web_runs AS w WHERE w.run_id = $1 AND w.owner = $2;

-- name: web_run_lock_owned --
-- Lock one run of this owner for its deletion; its tenant (the run's, or the
-- submission's namespace) and whether it has ended. No row: not the owner's, or locked.
SELECT w.run_id, coalesce(r.tenant, w.namespace) AS tenant,
       coalesce(r.state, coalesce(w.closed_state, 'running')) AS state, r.id IS NULL AS pending
FROM web_runs AS w LEFT JOIN runs AS r ON r.id = w.run_id
WHERE w.run_id = $1 AND w.owner = $2
FOR UPDATE OF w;

-- name: web_submission_forget --
-- Delete a closed submission that never became a run (no runs row to cascade from).
DELETE FROM web_runs AS w
WHERE w.run_id = $1 AND w.owner = $2 AND w.closed_state IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM runs AS r WHERE r.id = w.run_id)
RETURNING w.run_id;

-- name: web_release_deleted --
-- After a run's deletion: the tenant's ownership of its documents ($2) by upload ends
-- where no run of the tenant uses them any more and no open submission names them.
DELETE FROM document_owners AS o
WHERE o.tenant = $1 AND o.digest = ANY($2::text[])
  AND NOT EXISTS (SELECT 1 FROM run_sources AS s JOIN runs AS r ON r.id = s.run_id
                  WHERE s.digest = o.digest AND r.tenant = o.tenant)
  AND NOT EXISTS (SELECT 1 FROM web_runs AS w LEFT JOIN runs AS r ON r.id = w.run_id
                  WHERE w.namespace = o.tenant AND r.id IS NULL AND w.closed_state IS NULL
                    AND o.digest = ANY(w.digests))
RETURNING o.digest;

-- name: web_documents_forget --
-- The documents of a deleted run ($1) that nothing uses any more (no run, no citation, no
-- owner, no submission): deleted, with their pages and chunks. Returns their digests.
DELETE FROM documents AS d
WHERE d.digest = ANY($1::text[])
  AND NOT EXISTS (SELECT 1 FROM run_sources AS s WHERE s.digest = d.digest)
  AND NOT EXISTS (SELECT 1 FROM citations AS c WHERE c.digest = d.digest)
  AND NOT EXISTS (SELECT 1 FROM document_owners AS o WHERE o.digest = d.digest)
  AND NOT EXISTS (SELECT 1 FROM web_runs AS w WHERE d.digest = ANY(w.digests))
RETURNING d.digest;

-- name: web_runs_expired --
-- Up to $2 runs of web users that ended over $1 seconds ago (their owner with them),
-- oldest first; a closed submission ended when it was created.
SELECT w.run_id, w.owner
FROM web_runs AS w LEFT JOIN runs AS r ON r.id = w.run_id
WHERE (r.state IN ('succeeded', 'failed', 'cancelled')
       AND r.finished_at < now() - make_interval(secs => $1))
   OR (r.id IS NULL AND w.closed_state IS NOT NULL
       AND w.created_at < now() - make_interval(secs => $1))
ORDER BY coalesce(r.finished_at, w.created_at)
LIMIT $2;

-- name: web_user_seen --
-- A user signed in and viewed a page: known from now on (last_seen refreshed hourly).
INSERT INTO web_users AS u (name) VALUES ($1)
ON CONFLICT (name) DO UPDATE SET last_seen = now()
WHERE u.last_seen < now() - interval '1 hour';

-- name: web_users_unknown --
-- Of these names, those nobody has signed in as.
SELECT n.name FROM unnest($1::text[]) AS n (name)
WHERE NOT EXISTS (SELECT 1 FROM web_users AS u WHERE u.name = n.name);
