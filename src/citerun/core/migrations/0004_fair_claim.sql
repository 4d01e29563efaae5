-- citerun schema, version 4: fair claims and per-tenant caps (see docs/architecture.md,
-- "Queue"). Never edit this file once it has landed.

-- The tenant of a task (its run's tenant, 'default' without a run), copied at enqueue so
-- the claim can count and skip a tenant's tasks without a join; and the fair-share key
-- the claim orders by after priority: (log2 of the tenant's open tasks at enqueue) << 32
-- plus the task's place in its run's backlog. A tenant with a smaller backlog goes first;
-- within a band, runs take turns.
ALTER TABLE tasks ADD COLUMN tenant text NOT NULL DEFAULT 'default';
ALTER TABLE tasks ADD COLUMN fair_key bigint NOT NULL DEFAULT 0;

-- The claim walks one kind at a time in claim order, so due tasks of kinds a worker does
-- not serve are never read; the due probes find the earliest task of a kind directly.
DROP INDEX tasks_queued_idx;
DROP INDEX tasks_queued_due_idx;
CREATE INDEX tasks_claim_idx ON tasks (kind, priority, fair_key, id) WHERE state = 'queued';
CREATE INDEX tasks_queued_kind_due_idx ON tasks (kind, run_after) WHERE state = 'queued';
-- A tenant's open tasks: its backlog at enqueue, its in-flight count under a cap.
CREATE INDEX tasks_tenant_open_idx ON tasks (tenant, state) WHERE state IN ('queued', 'running');

-- The capped claim finds the (kind, tenant) pairs with queued tasks by a skip scan of
-- this index and reads the head of each pair whose tenant has room, so a tenant at its
-- cap never has its backlog walked (the deadline-week bench: 5x FIFO's makespan before).
CREATE INDEX tasks_claim_tenant_idx ON tasks (kind, tenant, priority, fair_key, id)
    WHERE state = 'queued';

-- Claim up to p_limit due tasks of p_kinds for p_worker_id, in (priority, fair_key, id)
-- order, optionally only of run p_run_id (a local worker serving its own run). A tenant
-- named in p_cap_tenants (cap p_caps[i]), or any tenant when p_default_cap is set, never
-- has more tasks running than its cap: such claims take one transaction-scoped advisory
-- lock first, so they run one at a time, and count the running tasks with a snapshot
-- taken after the lock (a VOLATILE function takes one per statement). One statement for
-- the caller. Versioned by name: a changed claim is citerun_claim_v2, so old and new
-- workers can run side by side during a rollout.
-- Plans are pinned (nested loops): a capped claim for a small tenant behind a 1M-task
-- tenant took 1.6 s with the planner's hash join over a sequential scan
-- (bench/bench_queue_scale.py).
CREATE FUNCTION citerun_claim_v1(
    p_worker_id text, p_kinds text[], p_lease_s float8, p_limit integer, p_run_id uuid,
    p_cap_tenants text[], p_caps integer[], p_default_cap integer)
RETURNS SETOF tasks
LANGUAGE plpgsql VOLATILE
-- Every join in the claim is a few hundred candidates to tasks by primary key, but the
-- planner cannot size a lateral over an array argument and chose a hash join over a
-- sequential scan of tasks (100-180 ms per claim at 200k rows); nested loops it is.
SET enable_hashjoin = off
SET enable_mergejoin = off
AS $$
#variable_conflict use_column
DECLARE
    v_capped boolean := p_default_cap IS NOT NULL OR cardinality(p_cap_tenants) > 0;
    v_kinds text[];
    v_left integer := p_limit;
    v_got integer;
    v_room_tenants text[] := '{}';
    v_rooms integer[] := '{}';
    v_full text[] := '{}';
    v_pair_kinds text[];
    v_pair_tenants text[];
    v_kind text;
    v_tenant text;
BEGIN
    IF NOT v_capped THEN
        v_kinds := ARRAY(
            SELECT k.kind FROM unnest(p_kinds) AS k (kind)
            WHERE EXISTS (SELECT 1 FROM tasks WHERE state = 'queued' AND kind = k.kind
                                                AND run_after <= now()));
        IF cardinality(v_kinds) = 0 THEN
            RETURN;
        ELSIF cardinality(v_kinds) = 1 THEN
            RETURN QUERY
            UPDATE tasks AS t
            SET state = 'running', worker_id = p_worker_id, attempt = t.attempt + 1,
                claimed_at = now(), lease_expires_at = now() + make_interval(secs => p_lease_s)
            FROM (
                SELECT id FROM tasks
                WHERE state = 'queued' AND kind = v_kinds[1] AND run_after <= now()
                  AND (p_run_id IS NULL OR run_id = p_run_id)
                ORDER BY priority, fair_key, id
                FOR UPDATE SKIP LOCKED
                LIMIT v_left
            ) AS due
            WHERE t.id = due.id
            RETURNING t.*;
            RETURN;
        END IF;
        -- Several kinds due: merge the head of each kind, no caps to apply.
        RETURN QUERY
        UPDATE tasks AS t
        SET state = 'running', worker_id = p_worker_id, attempt = t.attempt + 1,
            claimed_at = now(), lease_expires_at = now() + make_interval(secs => p_lease_s)
        FROM (
            SELECT c.id FROM unnest(v_kinds) AS k (kind)
            CROSS JOIN LATERAL (
                -- 2x + 16 spare candidates per kind: rows a concurrent claim holds are
                -- skipped below, and the next ones taken instead.
                SELECT id, priority, fair_key FROM tasks
                WHERE state = 'queued' AND kind = k.kind AND run_after <= now()
                  AND (p_run_id IS NULL OR run_id = p_run_id)
                ORDER BY priority, fair_key, id
                LIMIT v_left * 3 + 16
            ) AS c
            JOIN tasks AS l ON l.id = c.id
            WHERE l.state = 'queued'
            ORDER BY c.priority, c.fair_key, c.id
            FOR UPDATE OF l SKIP LOCKED
            LIMIT v_left
        ) AS due
        WHERE t.id = due.id
        RETURNING t.*;
        RETURN;
    END IF;
    -- Caps apply: capped claims take turns, and count running tasks after the lock.
    PERFORM pg_advisory_xact_lock(1667855475, 1634298226);  -- 'citerun', 'capclaim'
    FOR pass IN 1..3 LOOP
        SELECT coalesce(array_agg(tenant), '{}'), coalesce(array_agg(room), '{}'),
               coalesce(array_agg(tenant) FILTER (WHERE room <= 0), '{}')
        INTO v_room_tenants, v_rooms, v_full
        FROM (
            SELECT coalesce(c.tenant, r.tenant) AS tenant,
                   coalesce(c.cap, p_default_cap) - coalesce(r.n, 0) AS room
            FROM unnest(p_cap_tenants, p_caps) AS c (tenant, cap)
            FULL JOIN (SELECT tenant, count(*)::integer AS n FROM tasks
                       WHERE state = 'running' GROUP BY tenant) AS r
                   ON r.tenant = c.tenant
        ) AS rooms
        WHERE room IS NOT NULL;
        -- The (kind, tenant) pairs with queued tasks whose tenant has room: a skip scan
        -- of tasks_claim_tenant_idx, one probe per pair, so a full tenant's backlog is
        -- never read.
        v_pair_kinds := '{}';
        v_pair_tenants := '{}';
        FOREACH v_kind IN ARRAY p_kinds LOOP
            SELECT tenant INTO v_tenant FROM tasks
            WHERE state = 'queued' AND kind = v_kind ORDER BY tenant LIMIT 1;
            WHILE FOUND LOOP
                IF v_tenant <> ALL (v_full) THEN
                    v_pair_kinds := v_pair_kinds || v_kind;
                    v_pair_tenants := v_pair_tenants || v_tenant;
                END IF;
                SELECT tenant INTO v_tenant FROM tasks
                WHERE state = 'queued' AND kind = v_kind AND tenant > v_tenant
                ORDER BY tenant LIMIT 1;
            END LOOP;
        END LOOP;
        EXIT WHEN cardinality(v_pair_kinds) = 0;
        RETURN QUERY
        UPDATE tasks AS t
        SET state = 'running', worker_id = p_worker_id, attempt = t.attempt + 1,
            claimed_at = now(), lease_expires_at = now() + make_interval(secs => p_lease_s)
        FROM (
            SELECT q.id FROM (
                SELECT c.id, c.priority, c.fair_key,
                       row_number() OVER (PARTITION BY p.tenant
                                          ORDER BY c.priority, c.fair_key, c.id) AS rn,
                       p.room
                FROM (
                    SELECT x.kind, x.tenant,
                           coalesce((SELECT r.room FROM unnest(v_room_tenants, v_rooms)
                                     AS r (tenant, room) WHERE r.tenant = x.tenant),
                                    p_default_cap, v_left) AS room
                    FROM unnest(v_pair_kinds, v_pair_tenants) AS x (kind, tenant)
                ) AS p
                CROSS JOIN LATERAL (
                    SELECT id, priority, fair_key FROM tasks
                    WHERE state = 'queued' AND kind = p.kind AND tenant = p.tenant
                      AND run_after <= now() AND (p_run_id IS NULL OR run_id = p_run_id)
                    -- tenant is fixed here; ordering by it too makes the plan walk
                    -- tasks_claim_tenant_idx, not another tenant's backlog.
                    ORDER BY tenant, priority, fair_key, id
                    LIMIT least(v_left, p.room) + 16
                ) AS c
            ) AS q
            JOIN tasks AS l ON l.id = q.id
            WHERE q.rn <= q.room AND l.state = 'queued'
            ORDER BY q.priority, q.fair_key, q.id
            FOR UPDATE OF l SKIP LOCKED
            LIMIT v_left
        ) AS due
        WHERE t.id = due.id
        RETURNING t.*;
        GET DIAGNOSTICS v_got = ROW_COUNT;
        v_left := v_left - v_got;
        -- Another pass only when a cap may have held back candidates of other tenants.
        EXIT WHEN v_left <= 0 OR v_got = 0;
    END LOOP;
END;
$$;
