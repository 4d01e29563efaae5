-- Issue 48: a document's refusal is remembered by its bytes and the version of the readers
-- that refused it (runs.PARSER_VERSION): staged again under another version, it is parsed
-- again. NULL: refused before versions were recorded, or failed for a reason that is not
-- the readers' (its staged bytes went missing), so staged again it is parsed.
ALTER TABLE documents ADD COLUMN parser_version text;
