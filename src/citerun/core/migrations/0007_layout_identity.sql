-- Layout-aware parsing (issue 10): what a document's first page says it is, each page's
-- line geometry and a small rendering (the report highlights evidence on it), and why a
-- citation was mapped to its source.
ALTER TABLE documents
    ADD COLUMN doi text,
    ADD COLUMN arxiv_id text;

-- lines: [[x0, y0, x1, y1, text], ...] in reading order, points from the top-left;
-- image: a grey JPEG of the page (null for long documents, see pdf.RENDER_MAX_PAGES).
ALTER TABLE document_pages
    ADD COLUMN width real,
    ADD COLUMN height real,
    ADD COLUMN lines jsonb,
    ADD COLUMN image bytea;

ALTER TABLE citations
    ADD COLUMN match_reason text;
