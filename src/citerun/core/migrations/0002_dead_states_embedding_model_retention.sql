-- citerun schema, version 2 (see docs/architecture.md). Never edit this file once it has
-- landed.

-- Dead states: no code ever wrote documents.state 'parsing' or runs.state 'pending' (a
-- run is created 'running'), so they go from the CHECKs.
UPDATE documents SET state = 'staged' WHERE state = 'parsing';
ALTER TABLE documents DROP CONSTRAINT documents_state_check;
ALTER TABLE documents ADD CONSTRAINT documents_state_check
    CHECK (state IN ('staged', 'parsed', 'failed'));
UPDATE runs SET state = 'running' WHERE state = 'pending';
ALTER TABLE runs ALTER COLUMN state SET DEFAULT 'running';
ALTER TABLE runs DROP CONSTRAINT runs_state_check;
ALTER TABLE runs ADD CONSTRAINT runs_state_check
    CHECK (state IN ('running', 'succeeded', 'failed', 'cancelled'));
DROP INDEX runs_active_idx;
CREATE INDEX runs_active_idx ON runs (tenant) WHERE state = 'running';

-- Attempts come from the settings (CITERUN_QUEUE__MAX_ATTEMPTS, per kind), resolved when a
-- task is enqueued; the schema no longer has an opinion of its own.
ALTER TABLE tasks ALTER COLUMN max_attempts DROP DEFAULT;

-- The model and width of every stored vector, so retrieval never compares vectors of two
-- models and `citerun reembed` knows what to redo. Rows stored before this migration
-- were made by the only embedder that existed then (the offline WordLlama default).
ALTER TABLE chunks ADD COLUMN embedding_model text;
ALTER TABLE chunks ADD COLUMN embedding_dim integer;
UPDATE chunks SET embedding_model = 'wordllama/l2_supercat@256', embedding_dim = 256;
ALTER TABLE chunks ALTER COLUMN embedding_model SET NOT NULL;
ALTER TABLE chunks ALTER COLUMN embedding_dim SET NOT NULL;
ALTER TABLE chunks ADD CONSTRAINT chunks_embedding_dim_check
    CHECK (embedding_dim = vector_dims(embedding));
CREATE INDEX chunks_digest_model_idx ON chunks (digest, embedding_model);

-- Retention (operator/cleaner.py): finished tasks and runs, oldest first, in small
-- batches; partial indexes so the cleaner never reads live rows.
CREATE INDEX tasks_finished_idx ON tasks (finished_at)
    WHERE state IN ('succeeded', 'failed', 'cancelled');
CREATE INDEX runs_finished_idx ON runs (finished_at)
    WHERE state IN ('succeeded', 'failed', 'cancelled');
