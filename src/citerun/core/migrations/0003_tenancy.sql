-- Tenancy (issue 12): tenant = the CitationRun's namespace.
--
-- documents stay content-addressed (one row, one parse per digest), but a tenant may
-- reference a digest only if it owns it: it brought the bytes itself (upload, ConfigMap,
-- Secret or URL of one of its runs). document_owners is that right, checked on every
-- reference (runs.create) and counted against the tenant's byte cap. When no active run
-- of a tenant needs a document any more, its ownership ends; a document no tenant owns
-- loses its bytes, pages and chunks (runs.finish -> run_release_documents).
CREATE TABLE document_owners (
    tenant      text NOT NULL,
    digest      text NOT NULL REFERENCES documents (digest) ON DELETE CASCADE,
    size_bytes  bigint NOT NULL CHECK (size_bytes >= 0),
    owned_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, digest)
);
CREATE INDEX document_owners_digest_idx ON document_owners (digest);

-- Whoever staged a document so far owns it, and so does every tenant with a run using it.
INSERT INTO document_owners (tenant, digest, size_bytes)
SELECT tenant, digest, size_bytes FROM documents
ON CONFLICT DO NOTHING;
INSERT INTO document_owners (tenant, digest, size_bytes)
SELECT DISTINCT r.tenant, s.digest, d.size_bytes
FROM run_sources AS s JOIN runs AS r ON r.id = s.run_id JOIN documents AS d USING (digest)
ON CONFLICT DO NOTHING;

-- The tenant's byte cap at admission, so the worker can hold URL downloads to it.
ALTER TABLE runs ADD COLUMN max_tenant_bytes bigint CHECK (max_tenant_bytes >= 1);

-- A run's own judge API key (spec.judge.openai.apiKeySecretRef), read by the operator
-- only after the apiserver checked the run's creator may get that Secret; deleted when the
-- run reaches a terminal state.
CREATE TABLE run_secrets (
    run_id      uuid PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    judge_api_key text NOT NULL
);
