"""``python -m citerun.pipeline.report [PATH]``: write the report's JSON schema to PATH
(``docs/report.schema.json``) or stdout."""

from citerun.pipeline.report.model import main

raise SystemExit(main())
