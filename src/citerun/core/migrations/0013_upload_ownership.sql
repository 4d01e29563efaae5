-- How a tenant came to own a document (issue 12, tenancy): 'upload' (citerun upload) is
-- kept until the staging TTL has passed without a run of the tenant using it, so a run
-- waiting for capacity or created after its upload still finds its documents; 'run'
-- (a run's ConfigMap, Secret or URL) ends when no active run of the tenant needs it.
ALTER TABLE document_owners
    ADD COLUMN via text NOT NULL DEFAULT 'upload' CHECK (via IN ('upload', 'run'));
CREATE INDEX document_owners_upload_idx ON document_owners (owned_at) WHERE via = 'upload';
