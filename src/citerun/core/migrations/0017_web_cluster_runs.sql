-- The web service on a cluster (issue 26): the service stages the upload and records its
-- owner, then creates a CitationRun; the run itself is inserted later, by the operator,
-- when it admits the CitationRun. So a web_runs row may now come before its run: the
-- foreign key goes, a trigger keeps "the row goes with its run" (retention), and the row
-- says what the page shows until the run exists.
--
--   namespace, resource_name: the CitationRun (NULL for a run of the service's own
--     database, created with its row in one transaction).
--   name: the thesis's name as the page shows it (the run is named after the resource).
--   digests: the documents the upload staged; counted against the user's staged bytes
--     until the run exists. fresh_digests: those the namespace did not own before, whose
--     ownership the service takes back when the CitationRun is never created.
--   closed_state, closed_error: a submission that never became a run (the CitationRun
--     could not be created, was refused for good, deleted or cancelled before admission).
ALTER TABLE web_runs DROP CONSTRAINT web_runs_run_id_fkey;
ALTER TABLE web_runs
    ADD COLUMN namespace text,
    ADD COLUMN resource_name text,
    ADD COLUMN name text,
    ADD COLUMN digests text[] NOT NULL DEFAULT '{}',
    ADD COLUMN fresh_digests text[] NOT NULL DEFAULT '{}',
    ADD COLUMN closed_state text CHECK (closed_state IN ('failed', 'cancelled')),
    ADD COLUMN closed_error text,
    ADD CONSTRAINT web_runs_resource CHECK ((namespace IS NULL) = (resource_name IS NULL));
CREATE UNIQUE INDEX web_runs_resource_idx ON web_runs (namespace, resource_name)
    WHERE namespace IS NOT NULL;

CREATE FUNCTION web_runs_follow_run() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM web_runs WHERE run_id = OLD.id;
    RETURN OLD;
END;
$$;
CREATE TRIGGER runs_delete_web_runs AFTER DELETE ON runs
    FOR EACH ROW EXECUTE FUNCTION web_runs_follow_run();
