-- name: role_exists --
-- Whether a role of this name exists.
SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1);

-- name: role_create_statement --
-- The statement creating the application's login role: no superuser, CREATEDB or CREATEROLE.
SELECT format('CREATE ROLE %I LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD %L',
              $1::text, $2::text);

-- name: role_password_statement --
-- The statement (re)setting a role's password, from the password file.
SELECT format('ALTER ROLE %I PASSWORD %L', $1::text, $2::text);

-- name: database_owner --
-- The owner of a database (null: no such database).
SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = $1;

-- name: database_rename_statement --
-- The statement renaming a database (one the superuser owned, kept aside).
SELECT format('ALTER DATABASE %I RENAME TO %I', $1::text, $2::text);

-- name: database_create_statement --
-- The statement creating a database owned by the application role.
SELECT format('CREATE DATABASE %I OWNER %I', $1::text, $2::text);

-- name: extension_create_vector --
-- pgvector is not a trusted extension: the superuser creates it for the application.
CREATE EXTENSION IF NOT EXISTS vector;
