"""Small grey images of a document's pages, which the report shows with the evidence
highlighted."""

from __future__ import annotations

import pymupdf

# Pages are rendered for the report only for documents up to this many pages: a cited
# paper or chapter (about 40 ms and 20 KB a page), not a 300-page book or the thesis.
RENDER_MAX_PAGES = 60
# 0.6 x 72 dpi = 43 dpi grey: enough to recognise the page and see the highlighted lines.
_RENDER_ZOOM = 0.6
_RENDER_QUALITY = 50


def render_pages(doc: pymupdf.Document) -> dict[int, bytes]:
    """Every page as a small grey JPEG, by 1-based page number."""
    images: dict[int, bytes] = {}
    matrix = pymupdf.Matrix(_RENDER_ZOOM, _RENDER_ZOOM)  # type: ignore[no-untyped-call]
    for index in range(doc.page_count):
        pixmap = doc[index].get_pixmap(matrix=matrix, colorspace=pymupdf.csGRAY, alpha=False)
        jpeg = pixmap.tobytes("jpeg", jpg_quality=_RENDER_QUALITY)  # type: ignore[no-untyped-call]
        images[index + 1] = bytes(jpeg)
    return images
