-- Issue 46. A page read by OCR (a scan, or a text layer that is not text): the report says
-- its source was read by OCR, and that its words may be misread.
ALTER TABLE document_pages ADD COLUMN ocr boolean NOT NULL DEFAULT false;

-- Issue 46. A citation whose check failed on every attempt gets `not_checked` (the reason
-- names its source file) and the run still ends with its report: one bad source no longer
-- costs the thesis its report. The list is citerun.core.verdicts.Verdict's.
ALTER TABLE verdicts DROP CONSTRAINT verdicts_verdict_check;
ALTER TABLE verdicts ADD CONSTRAINT verdicts_verdict_check
    CHECK (verdict IN ('supported', 'partially_supported', 'unsupported', 'contradicted',
                       'source_unavailable', 'unresolved_citation', 'not_checked'));
