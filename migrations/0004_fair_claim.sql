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

-- Claim up to p_limit due tasks of p_kinds for p_worker_id, in (priority, fair_key, id)
-- order, optionally only of run p_run_id (a local worker serving its own run). A tenant
-- named in p_cap_tenants (cap p_caps[i]), or any tenant when p_default_cap is set, never
-- has more tasks running than its cap: such claims take one transaction-scoped advisory
-- lock first, so they run one at a time, and count the running tasks with a snapshot
-- taken after the lock (a VOLATILE function takes one per statement). One statement for
-- the caller. Versioned by name: a changed claim is citerun_claim_v2, so old and new
-- workers can run side by side during a rollout.
CREATE FUNCTION citerun_claim_v1(
    p_worker_id text, p_kinds text[], p_lease_s float8, p_limit integer, p_run_id uuid,
    p_cap_tenants text[], p_caps integer[], p_default_cap integer)
RETURNS SETOF tasks
LANGUAGE plpgsql VOLATILE
AS $$
#variable_conflict use_column
DECLARE
    v_capped boolean := p_default_cap IS NOT NULL OR cardinality(p_cap_tenants) > 0;
    v_left integer := p_limit;
    v_got integer;
    v_room_tenants text[] := '{}';
    v_rooms integer[] := '{}';
    v_full text[] := '{}';
BEGIN
    IF v_capped THEN
        PERFORM pg_advisory_xact_lock(1667855475, 1634298226);  -- 'citerun', 'capclaim'
    END IF;
    FOR pass IN 1..3 LOOP
        IF v_capped THEN
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
        END IF;
        RETURN QUERY
        UPDATE tasks AS t
        SET state = 'running', worker_id = p_worker_id, attempt = t.attempt + 1,
            claimed_at = now(), lease_expires_at = now() + make_interval(secs => p_lease_s)
        FROM (
            SELECT q.id FROM (
                SELECT c.id, c.priority, c.fair_key,
                       row_number() OVER (PARTITION BY c.tenant
                                          ORDER BY c.priority, c.fair_key, c.id) AS rn,
                       coalesce((SELECT x.room FROM unnest(v_room_tenants, v_rooms)
                                 AS x (tenant, room) WHERE x.tenant = c.tenant),
                                p_default_cap, v_left) AS room
                FROM unnest(p_kinds) AS k (kind)
                CROSS JOIN LATERAL (
                    -- 2x + 16 spare candidates per kind: rows a concurrent claim holds
                    -- are skipped below, and the next ones taken instead.
                    SELECT id, tenant, priority, fair_key FROM tasks
                    WHERE state = 'queued' AND kind = k.kind AND run_after <= now()
                      AND (p_run_id IS NULL OR run_id = p_run_id)
                      AND tenant <> ALL (v_full)
                    ORDER BY priority, fair_key, id
                    LIMIT v_left * 3 + 16
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
        EXIT WHEN v_left <= 0 OR v_got = 0 OR NOT v_capped;
    END LOOP;
END;
$$;
