"""The pipeline: documents in, verdicts and reports out.

pymupdf 2 imports its optional layout analyser (``pymupdf.layout``, the package
``pymupdf_layout`` it installs with an ONNX model and its dependencies) whenever that is
installed: about 0.7 s of CPU, 1.5-2 s of wall time on a busy machine, in every process
that reads a PDF (each worker, each worker's fork server, the CLI's library reader).
citerun never asks for it (it has its own layout step, :mod:`.layout`; pymupdf uses the
analyser only for ``Page.get_layout``), so it is kept out before pymupdf is first
imported: ``import pymupdf.layout`` then fails and pymupdf goes on without it, as it does
where the package is not installed (issue 47, item 6). A process that wants it (the
layout bench's pymupdf4llm comparison) removes the entry and imports it.
"""

import sys

sys.modules.setdefault("pymupdf.layout", None)  # type: ignore[arg-type]
