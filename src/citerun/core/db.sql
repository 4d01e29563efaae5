-- name: migration_lock --
-- Wait for the migration lock (session level: held across the per-file transactions).
SELECT pg_advisory_lock($1);

-- name: migration_unlock --
-- Release the migration lock.
SELECT pg_advisory_unlock($1);

-- name: schema_migrations_create --
-- The table that records applied migration files and their checksums.
CREATE TABLE IF NOT EXISTS schema_migrations (
    version     integer PRIMARY KEY,
    name        text NOT NULL,
    checksum    text NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT now()
);

-- name: schema_migrations_all --
-- Every applied migration.
SELECT version, name, checksum FROM schema_migrations ORDER BY version;

-- name: schema_migrations_insert --
-- Record one applied migration.
INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3);
