-- Issue 51. Sources the writer does not have, found by open-access services (Unpaywall,
-- OpenAlex, arXiv, Europe PMC, Crossref, Semantic Scholar) when a run asks for it.
--
-- What was found is stored once and shared by every later run: the bytes by their sha256
-- (a PDF, or an abstract's UTF-8 text), each work by its identifiers' key
-- (citerun.pipeline.openaccess.WorkIds.key(): "doi:10.1000/x", "arxiv:...", else the folded
-- title, first author and year) with what the services answered (the Found JSON: service,
-- links, licence, attempts). These two tables name no run, tenant or user: which works a
-- run looked for is the run's own (run_fetches, deleted with the run). Retention deletes a
-- work past the retention age, then the bytes no work names (core/retention.sql).
CREATE TABLE fetched_contents (
    sha256      text PRIMARY KEY CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    kind        text NOT NULL CHECK (kind IN ('pdf', 'abstract')),
    content     bytea NOT NULL,
    size_bytes  bigint NOT NULL CHECK (size_bytes >= 0),
    stored_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE fetched_works (
    work_key         text PRIMARY KEY CHECK (length(work_key) BETWEEN 1 AND 1000),
    kind             text NOT NULL CHECK (kind IN ('pdf', 'abstract', 'none')),
    pdf_sha256       text REFERENCES fetched_contents (sha256),
    abstract_sha256  text REFERENCES fetched_contents (sha256),
    found            jsonb NOT NULL,
    fetched_at       timestamptz NOT NULL DEFAULT now(),
    CHECK ((kind = 'pdf') = (pdf_sha256 IS NOT NULL)),
    CHECK (kind <> 'abstract' OR abstract_sha256 IS NOT NULL)
);
CREATE INDEX fetched_works_fetched_idx ON fetched_works (fetched_at);
CREATE INDEX fetched_works_pdf_idx ON fetched_works (pdf_sha256);
CREATE INDEX fetched_works_abstract_idx ON fetched_works (abstract_sha256);

-- The works one run looked for (one find_source task each), what it got and the document
-- its citations were judged on; a copy of the Found JSON, so the run's report does not
-- depend on the shared rows staying.
CREATE TABLE run_fetches (
    run_id       uuid NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    work_key     text NOT NULL CHECK (length(work_key) BETWEEN 1 AND 1000),
    label        text NOT NULL,
    reference    text NOT NULL,
    ids          jsonb NOT NULL,
    status       text NOT NULL DEFAULT 'pending'
                 CHECK (status IN ('pending', 'pdf', 'abstract', 'none', 'failed')),
    digest       text REFERENCES documents (digest),
    found        jsonb,
    error        text,
    finished_at  timestamptz,
    PRIMARY KEY (run_id, work_key)
);
CREATE INDEX run_fetches_digest_idx ON run_fetches (digest) WHERE digest IS NOT NULL;

-- The work a citation waits for (its verdict comes when the work's find_source task ends).
ALTER TABLE citations ADD COLUMN work_key text;

-- A citation judged on a fetched abstract alone that the abstract does not state is
-- `not_in_abstract` ("not found in the abstract: add the full text"), never `unsupported`.
-- The list is citerun.core.verdicts.Verdict's.
ALTER TABLE verdicts DROP CONSTRAINT verdicts_verdict_check;
ALTER TABLE verdicts ADD CONSTRAINT verdicts_verdict_check
    CHECK (verdict IN ('supported', 'partially_supported', 'unsupported', 'contradicted',
                       'source_unavailable', 'unresolved_citation', 'not_checked',
                       'not_in_abstract'));
