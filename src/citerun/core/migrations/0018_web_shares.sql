-- Sharing a run with a supervisor (issue 39): the run's owner grants a named user read
-- access to one run, and may take it back. A reader sees the run's page, status and
-- report (listed under "Shared with me"), never its cancel button or its sharing; anybody
-- else still gets 404. A grant goes with its run's ownership row (and so with the run:
-- retention deletes the run, a trigger the web_runs row); it follows the row's id when a
-- cluster submission's placeholder id becomes the run's.
CREATE TABLE web_shares (
    run_id      uuid NOT NULL REFERENCES web_runs (run_id) ON DELETE CASCADE ON UPDATE CASCADE,
    reader      text NOT NULL CHECK (length(reader) BETWEEN 1 AND 256),
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, reader)
);
CREATE INDEX web_shares_reader_idx ON web_shares (reader, created_at DESC);
