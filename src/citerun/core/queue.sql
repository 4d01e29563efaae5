-- name: task_enqueue_many --
-- Insert a batch of tasks with tenant and fair-share key, and NOTIFY each inserted kind.
-- One statement, so an enqueue outside a transaction is one round trip; the NOTIFY is
-- delivered when the transaction commits. An existing dedupe_key is skipped.
-- fair_key = (floor(log2(the tenant's open tasks, this batch included)) << 32) + the task's
-- place in its run's backlog (see src/citerun/core/migrations/0004_fair_claim.sql); the count is capped
-- at 4,096 (band 12) so an enqueue stays cheap behind any backlog.
WITH input AS (
    SELECT t.*, coalesce(r.tenant, 'default') AS tenant
    FROM unnest($1::text[], $2::jsonb[], $3::integer[], $4::float8[], $5::integer[],
                $6::text[], $7::uuid[]) WITH ORDINALITY
         AS t (kind, payload, priority, delay_s, max_attempts, dedupe_key, run_id, ord)
    LEFT JOIN runs AS r ON r.id = t.run_id
), tenant_load AS (
    SELECT i.tenant, count(*) + (
        SELECT count(*) FROM (
            SELECT 1 FROM tasks AS o
            WHERE o.tenant = i.tenant AND o.state IN ('queued', 'running') LIMIT 4096
        ) AS open) AS load
    FROM input AS i GROUP BY i.tenant
), run_load AS (
    SELECT i.run_id, (SELECT count(*) FROM tasks AS o
                      WHERE o.run_id = i.run_id AND o.state IN ('queued', 'running')) AS open
    FROM input AS i WHERE i.run_id IS NOT NULL GROUP BY i.run_id
)
, inserted AS (
    INSERT INTO tasks (kind, payload, priority, run_after, max_attempts, dedupe_key, run_id,
                       tenant, fair_key)
    SELECT i.kind, i.payload, i.priority, now() + make_interval(secs => i.delay_s),
           i.max_attempts, i.dedupe_key, i.run_id, i.tenant,
           (floor(log(2, tl.load))::bigint << 32) + coalesce(rl.open, 0)
           + row_number() OVER (PARTITION BY i.run_id ORDER BY i.ord)
    FROM input AS i
    JOIN tenant_load AS tl ON tl.tenant = i.tenant
    LEFT JOIN run_load AS rl ON rl.run_id = i.run_id
    ORDER BY i.ord
    ON CONFLICT (dedupe_key) DO NOTHING
    RETURNING id, kind
), notified AS (
    -- The payload is the kind, with ':later' when none of its tasks is due yet (keep in
    -- sync with queue.LATER): a worker woken for due work it did not get skips the probe.
    SELECT pg_notify('citerun_tasks',
                     kind || CASE WHEN due THEN '' ELSE ':later' END)
    FROM (SELECT i.kind, bool_or(i.delay_s <= 0) AS due
          FROM input AS i JOIN inserted AS n ON n.kind = i.kind GROUP BY i.kind) AS kinds
)
SELECT id, kind, (SELECT count(*) FROM notified) AS notifications FROM inserted;

-- name: task_notify --
-- Wake the listening workers for one kind; delivered only when the transaction commits.
SELECT pg_notify('citerun_tasks', $1);

-- name: task_claim_many --
-- Claim up to $4 due tasks of kinds $2 fairly, within the tenant caps (citerun_claim_v1).
SELECT id, kind, payload, attempt, releases, max_attempts, run_id, created_at, run_after,
       claimed_at, tenant
FROM citerun_claim_v1($1, $2::text[], $3, $4, $5::uuid, $6::text[], $7::integer[], $8);

-- name: task_complete --
-- Mark one claimed task succeeded, fenced by (id, attempt) and the claiming worker.
UPDATE tasks
SET state = 'succeeded', result = $4, lease_expires_at = NULL, finished_at = now()
WHERE id = $1 AND attempt = $2 AND worker_id = $3 AND state = 'running'
RETURNING id;

-- name: task_complete_many --
-- Mark a batch of claimed tasks succeeded, each fenced by (id, attempt) and worker.
UPDATE tasks AS t
SET state = 'succeeded', lease_expires_at = NULL, finished_at = now()
FROM unnest($1::bigint[], $2::integer[]) AS done (id, attempt)
WHERE t.id = done.id AND t.attempt = done.attempt AND t.worker_id = $3
  AND t.state = 'running'
RETURNING t.id;

-- name: task_fail --
-- Record a failed attempt: requeue after $5 seconds, or dead-letter after max_attempts.
UPDATE tasks
SET state = CASE WHEN attempt - releases >= max_attempts OR $6 THEN 'failed' ELSE 'queued' END,
    run_after = now() + make_interval(secs => $5),
    last_error = $4, lease_expires_at = NULL,
    finished_at = CASE WHEN attempt - releases >= max_attempts OR $6 THEN now() END
WHERE id = $1 AND attempt = $2 AND worker_id = $3 AND state = 'running'
RETURNING state;

-- name: task_release_many --
-- Hand claimed tasks back to the queue at once, without charging the attempt.
UPDATE tasks AS t
SET state = 'queued', releases = t.releases + 1, run_after = now(),
    lease_expires_at = NULL
FROM unnest($1::bigint[], $2::integer[]) AS held (id, attempt)
WHERE t.id = held.id AND t.attempt = held.attempt AND t.worker_id = $3
  AND t.state = 'running'
RETURNING t.id, t.kind;

-- name: task_heartbeat_many --
-- Extend the leases of the tasks a worker holds and stamp its workers row, in one statement.
WITH stamp AS (
    UPDATE workers SET heartbeat_at = now(), busy = cardinality($1::bigint[])
    WHERE id = $3
)
UPDATE tasks AS t
SET lease_expires_at = now() + make_interval(secs => $4)
FROM unnest($1::bigint[], $2::integer[]) AS held (id, attempt)
WHERE t.id = held.id AND t.attempt = held.attempt AND t.worker_id = $3
  AND t.state = 'running'
RETURNING t.id;

-- name: task_sweep_stalled --
-- Requeue running tasks whose lease expired (with backoff), dead-letter the exhausted,
-- notify for the requeued, and stamp the sweeping worker's row: one statement, so an
-- idle worker's maintenance costs one round trip. With $4 (requeue only), exhausted
-- tasks are left for a worker's sweep, which runs the dead-letter hooks. The delay is
-- citerun.retry.RetryPolicy.delay_s of the charged attempts: base $1, cap $2, jitter $5.
WITH stamp AS (
    UPDATE workers SET heartbeat_at = now() WHERE id = $3
), swept AS (
    UPDATE tasks AS t
    SET state = CASE WHEN t.attempt - t.releases >= t.max_attempts THEN 'failed' ELSE 'queued' END,
        run_after = now() + make_interval(secs => least(
            $2::float8, $1::float8 * power(2, greatest(t.attempt - t.releases - 1, 0)))
            * (1 - $5::float8 + 2 * $5::float8 * random())),
        last_error = 'lease expired: worker ' || coalesce(t.worker_id, '?')
                     || ' stopped heartbeating during attempt ' || t.attempt,
        lease_expires_at = NULL,
        finished_at = CASE WHEN t.attempt - t.releases >= t.max_attempts THEN now() END
    FROM (
        SELECT id FROM tasks
        WHERE state = 'running' AND lease_expires_at < now()
          AND (NOT $4::boolean OR attempt - releases < max_attempts)
        ORDER BY lease_expires_at
        FOR UPDATE SKIP LOCKED
        LIMIT 500
    ) AS stalled
    WHERE t.id = stalled.id
    RETURNING t.id, t.kind, t.state, t.run_id
), notified AS (
    SELECT pg_notify('citerun_tasks', kind || ':later') FROM (
        SELECT DISTINCT kind FROM swept WHERE state = 'queued') AS kinds
)
SELECT s.id, s.kind, s.state, s.run_id, (SELECT count(*) FROM notified) AS notifications
FROM swept AS s
UNION ALL
SELECT NULL, NULL, NULL, NULL, (SELECT count(*) FROM notified)
WHERE NOT EXISTS (SELECT 1 FROM swept);

-- name: task_has_due --
-- Whether a task of kinds $1 (of run $2 when given) is due: one index probe per kind.
SELECT EXISTS (
    SELECT 1 FROM unnest($1::text[]) AS k (kind)
    WHERE EXISTS (SELECT 1 FROM tasks
                  WHERE state = 'queued' AND kind = k.kind AND run_after <= now()
                    AND ($2::uuid IS NULL OR run_id = $2))
);

-- name: task_cancel_by_run --
-- Cancel every unfinished task of a run; running ones lose their lease (fencing rejects them).
UPDATE tasks
SET state = 'cancelled', lease_expires_at = NULL, finished_at = now(),
    last_error = coalesce(last_error, $2)
WHERE run_id = $1 AND state IN ('queued', 'running')
RETURNING id;

-- name: task_depth --
-- Open tasks of kinds $1 by kind and state (worker metrics): finished rows are never read.
SELECT k.kind, 'queued' AS state,
       (SELECT count(*) FROM tasks WHERE state = 'queued' AND kind = k.kind) AS n
FROM unnest($1::text[]) AS k (kind)
UNION ALL
SELECT k.kind, 'running',
       (SELECT count(*) FROM tasks WHERE state = 'running' AND kind = k.kind)
FROM unnest($1::text[]) AS k (kind);

-- name: task_get --
-- One task by id.
SELECT id, kind, payload, state, priority, attempt, releases, max_attempts, worker_id,
       last_error, run_id, result, created_at, finished_at
FROM tasks WHERE id = $1;

-- name: worker_register --
-- Insert or refresh the workers row of a starting worker.
INSERT INTO workers (id, version, capabilities, state, busy, started_at, heartbeat_at)
VALUES ($1, $2, $3, 'active', 0, now(), now())
ON CONFLICT (id) DO UPDATE
SET version = excluded.version, capabilities = excluded.capabilities, state = 'active',
    busy = 0, started_at = now(), heartbeat_at = now();

-- name: worker_set_state --
-- Record a worker's lifecycle state (draining, stopped).
UPDATE workers SET state = $2, heartbeat_at = now() WHERE id = $1;

-- name: task_next_due --
-- Seconds until the earliest queued task of kinds $1 (of run $2) is due (null: none).
SELECT extract(epoch FROM min(first.run_after) - now())::float8
FROM unnest($1::text[]) AS k (kind)
CROSS JOIN LATERAL (
    SELECT run_after FROM tasks
    WHERE state = 'queued' AND kind = k.kind AND ($2::uuid IS NULL OR run_id = $2)
    ORDER BY run_after LIMIT 1
) AS first;

-- name: task_outstanding --
-- Tasks waiting or running now (what the autoscaler sizes the workers for).
SELECT count(*) FILTER (WHERE state = 'queued' AND run_after <= now()) AS due,
       count(*) FILTER (WHERE state = 'running') AS running
FROM tasks WHERE state IN ('queued', 'running');

-- name: worker_busy_all --
-- Live workers and how many tasks each holds now: counted in tasks, which every claim
-- and completion changes in its own transaction, not workers.busy, which is as old as the
-- last heartbeat (a worker that claimed since would look idle, and the autoscaler would
-- have its pod deleted first). Running rows only (tasks_running_lease_idx).
SELECT w.id, count(t.id)::integer AS busy
FROM workers w
LEFT JOIN tasks t ON t.state = 'running' AND t.worker_id = w.id
WHERE w.state <> 'stopped' AND w.heartbeat_at > now() - make_interval(secs => $1)
GROUP BY w.id;
