-- Issue 48: a large document is sent to Postgres in pieces (runs.PIECE_BYTES each) and put
-- together here, in the staging transaction, by the statement that stages it
-- (runs.sql document_stage): one 110 MB parameter was encoded and written by the driver
-- on the web service's event loop, holding /healthz up for a third of a second per
-- upload. A piece lives only inside the transaction that wrote it (the staging
-- statement deletes them), so the table is unlogged and never holds state; its values
-- are stored as they come (PDFs do not compress, and trying costs CPU).
CREATE UNLOGGED TABLE document_pieces (
    upload uuid NOT NULL,
    seq    integer NOT NULL,
    piece  bytea NOT NULL,
    PRIMARY KEY (upload, seq)
);
ALTER TABLE document_pieces ALTER COLUMN piece SET STORAGE EXTERNAL;
