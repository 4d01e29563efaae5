"""The report of a run: a versioned JSON document and one self-contained HTML page.

:mod:`.model` holds the pydantic models that *are* the JSON's documented schema
(``docs/report.schema.json``, ``docs/report.md``), :mod:`.build` assembles a run's
report from its stored rows, and :mod:`.render` renders it as HTML in the words of
:mod:`.meaning` (verdicts, problems, confidence, the order "most doubtful first", the rows
of citations to fix) and :mod:`.reasons` (the judge's reasons in plain words). Callers use
the names below (``report.build``, ``report.render_html``, ``report.to_fix_rows``...).
"""

from __future__ import annotations

from citerun.pipeline.report import build as _build
from citerun.pipeline.report import meaning as _meaning
from citerun.pipeline.report import model as _model
from citerun.pipeline.report import render as _render
from citerun.pipeline.report.build import *  # noqa: F403 (each module's __all__)
from citerun.pipeline.report.meaning import *  # noqa: F403
from citerun.pipeline.report.model import *  # noqa: F403
from citerun.pipeline.report.render import *  # noqa: F403

__all__ = _model.__all__ + _build.__all__ + _meaning.__all__ + _render.__all__
