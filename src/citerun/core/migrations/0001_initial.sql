-- citerun schema, version 1. Never edit this file once it has landed: add 0002_*.sql.
CREATE EXTENSION IF NOT EXISTS vector;

-- Content-addressed PDFs. raw holds the staged bytes until the document reaches a
-- terminal state (parsed or failed) or the staging TTL sweep drops them.
CREATE TABLE documents (
    digest        text PRIMARY KEY CHECK (digest ~ '^[0-9a-f]{64}$'),
    filename      text NOT NULL,
    size_bytes    bigint NOT NULL CHECK (size_bytes >= 0),
    raw           bytea,
    state         text NOT NULL DEFAULT 'staged'
                  CHECK (state IN ('staged', 'parsing', 'parsed', 'failed')),
    error_reason  text,
    error         text,
    title         text,
    authors       text[] NOT NULL DEFAULT '{}',
    year          integer,
    page_count    integer,
    tenant        text NOT NULL DEFAULT 'default',
    staged_at     timestamptz NOT NULL DEFAULT now(),
    finished_at   timestamptz
);
CREATE INDEX documents_staged_idx ON documents (staged_at) WHERE raw IS NOT NULL;

-- The cleaned text of each page of a parsed document (citation extraction reads these).
CREATE TABLE document_pages (
    digest  text NOT NULL REFERENCES documents (digest) ON DELETE CASCADE,
    number  integer NOT NULL CHECK (number >= 1),
    text    text NOT NULL,
    PRIMARY KEY (digest, number)
);

-- Text chunks of parsed documents. An in-memory BM25 index is only a cache of these rows.
CREATE TABLE chunks (
    id          bigserial PRIMARY KEY,
    digest      text NOT NULL REFERENCES documents (digest) ON DELETE CASCADE,
    ordinal     integer NOT NULL,
    page_start  integer NOT NULL,
    page_end    integer NOT NULL,
    text        text NOT NULL,
    embedding   vector(256) NOT NULL,
    UNIQUE (digest, ordinal),
    CHECK (page_end >= page_start)
);
CREATE INDEX chunks_embedding_idx ON chunks USING hnsw (embedding vector_cosine_ops);

-- One row per CitationRun (id = the custom resource's uid, or a generated uuid locally).
CREATE TABLE runs (
    id            uuid PRIMARY KEY,
    name          text NOT NULL,
    namespace     text,
    resource_uid  uuid,
    tenant        text NOT NULL DEFAULT 'default',
    generation    bigint NOT NULL DEFAULT 1,
    spec          jsonb NOT NULL,
    state         text NOT NULL DEFAULT 'pending'
                  CHECK (state IN ('pending', 'running', 'succeeded', 'failed', 'cancelled')),
    priority      integer NOT NULL DEFAULT 0,
    error         text,
    tokens_spent  bigint NOT NULL DEFAULT 0,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    finished_at   timestamptz
);
CREATE INDEX runs_active_idx ON runs (tenant) WHERE state IN ('pending', 'running');
CREATE INDEX runs_resource_idx ON runs (resource_uid);

-- Which document each role / citation key of a run points to.
CREATE TABLE run_sources (
    run_id    uuid NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    digest    text NOT NULL REFERENCES documents (digest),
    role      text NOT NULL CHECK (role IN ('thesis', 'source')),
    filename  text NOT NULL,
    keys      text[] NOT NULL DEFAULT '{}',
    PRIMARY KEY (run_id, role, digest)
);
CREATE INDEX run_sources_digest_idx ON run_sources (digest);

-- The queue. (id, attempt) is the fencing token of a claim; releases counts the claims
-- handed back by a draining worker, which are not charged against max_attempts.
CREATE TABLE tasks (
    id                bigserial PRIMARY KEY,
    kind              text NOT NULL,
    payload           jsonb NOT NULL DEFAULT '{}',
    state             text NOT NULL DEFAULT 'queued'
                      CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    priority          integer NOT NULL DEFAULT 0,
    run_after         timestamptz NOT NULL DEFAULT now(),
    attempt           integer NOT NULL DEFAULT 0,
    releases          integer NOT NULL DEFAULT 0,
    max_attempts      integer NOT NULL DEFAULT 5 CHECK (max_attempts >= 1),
    worker_id         text,
    claimed_at        timestamptz,
    lease_expires_at  timestamptz,
    last_error        text,
    dedupe_key        text,
    run_id            uuid REFERENCES runs (id) ON DELETE CASCADE,
    result            jsonb,
    created_at        timestamptz NOT NULL DEFAULT now(),
    finished_at       timestamptz
);
CREATE INDEX tasks_queued_idx ON tasks (priority, id) WHERE state = 'queued';
CREATE INDEX tasks_queued_due_idx ON tasks (run_after) WHERE state = 'queued';
CREATE INDEX tasks_running_lease_idx ON tasks (lease_expires_at) WHERE state = 'running';
CREATE INDEX tasks_run_idx ON tasks (run_id, state);
CREATE UNIQUE INDEX tasks_dedupe_key_idx ON tasks (dedupe_key);

-- Cited claims found in a run's thesis: one row per (claim, cited key).
CREATE TABLE citations (
    id        bigserial PRIMARY KEY,
    run_id    uuid NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    ordinal   integer NOT NULL,
    key       text NOT NULL,
    marker    text NOT NULL,
    claim     text NOT NULL,
    page      integer NOT NULL,
    locator   text,
    digest    text REFERENCES documents (digest),
    reference text,
    match_method text,
    match_score  real,
    UNIQUE (run_id, ordinal)
);

CREATE TABLE verdicts (
    citation_id  bigint PRIMARY KEY REFERENCES citations (id) ON DELETE CASCADE,
    run_id       uuid NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    verdict      text NOT NULL CHECK (verdict IN ('supported', 'partially_supported',
                 'unsupported', 'contradicted', 'source_unavailable', 'unresolved_citation')),
    confidence   real NOT NULL CHECK (confidence BETWEEN 0 AND 1),
    rationale    text NOT NULL,
    evidence     jsonb NOT NULL DEFAULT '[]',
    judge        text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX verdicts_run_idx ON verdicts (run_id, verdict);

CREATE TABLE reports (
    run_id      uuid PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    json        jsonb NOT NULL,
    html        text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- Live workers. busy = tasks held at the last heartbeat; the autoscaler spares busy pods.
CREATE TABLE workers (
    id            text PRIMARY KEY,
    version       text NOT NULL,
    capabilities  jsonb NOT NULL DEFAULT '{}',
    state         text NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'draining', 'stopped')),
    busy          integer NOT NULL DEFAULT 0,
    started_at    timestamptz NOT NULL DEFAULT now(),
    heartbeat_at  timestamptz NOT NULL DEFAULT now()
);
