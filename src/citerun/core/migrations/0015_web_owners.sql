-- The web service (issue 26): which user submitted which run. A user sees, fetches and
-- cancels only the runs listed here under their name, and the documents of those runs;
-- everything else answers 404, like an id nobody used. The row is written in the
-- transaction that stages the upload and creates the run, so a restarted service shows
-- the same runs; it goes with its run (retention deletes finished runs).
CREATE TABLE web_runs (
    run_id      uuid PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    owner       text NOT NULL CHECK (length(owner) BETWEEN 1 AND 256),
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX web_runs_owner_idx ON web_runs (owner, created_at DESC);

-- The service's secret keys (the HMAC key of its CSRF tokens), made by the first replica
-- to start: every replica and every restart checks the same tokens, and none lives only
-- in a process's memory.
CREATE TABLE web_keys (
    name        text PRIMARY KEY,
    secret      bytea NOT NULL CHECK (length(secret) >= 32),
    created_at  timestamptz NOT NULL DEFAULT now()
);
