-- Issue 40. Where a citation of a writer's file stands in it: "chapter2.tex:118" for a
-- LaTeX thesis, "paragraph 34" (or "footnote 3") for a Word one, so that the report
-- points the writer to it; NULL for a PDF thesis, whose citations have their page.
ALTER TABLE citations ADD COLUMN location text;
