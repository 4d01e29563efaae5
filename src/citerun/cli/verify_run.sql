-- name: local_runs_open --
-- Unfinished runs started by a local ``citerun verify`` (their spec names its process).
SELECT id, spec -> 'local' AS local FROM runs
WHERE state = 'running' AND spec ? 'local';
