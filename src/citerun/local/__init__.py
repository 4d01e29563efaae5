"""One machine: the embedded Postgres 18 (with pgvector) and finding the database."""
