-- Issue 24. A thesis read from the writer's own files (a .docx with citation fields, a
-- LaTeX bundle with its .bib): what they state exactly -- each citation's keys, locator
-- and sentence, the library's items -- as the parse stage read it, for the extraction
-- stage (citerun.pipeline.writer.formats.dumps). NULL for a PDF, read from its pages.
ALTER TABLE documents ADD COLUMN written jsonb;
-- What the extraction of a run's thesis did not take, with the reason (markers read as
-- footnote marks or equations, labels missing from the reference list, a cite command
-- outside the bundle): the report says what it left out instead of dropping it silently.
ALTER TABLE runs ADD COLUMN skipped jsonb NOT NULL DEFAULT '[]'::jsonb;
-- The page's printed label ("273", "xii"), which a thesis's locator cites: a quotation or
-- the evidence is checked against it, never against the PDF's page index.
ALTER TABLE document_pages ADD COLUMN label text;
-- A document one run could not use for a reason of the moment (a parse over the wall
-- clock on a busy node, a worker killed on every attempt): failed for that run, never as
-- the document's state, so another run (or a re-upload) parses it again (issue 27).
ALTER TABLE run_sources ADD COLUMN error_reason text, ADD COLUMN error text;
