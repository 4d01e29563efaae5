"""Small grey images of a document's pages, which the report shows with the evidence
highlighted."""

from __future__ import annotations

import pymupdf

# Pages are rendered for the report only for documents up to this many pages: a cited
# paper or chapter (about 120 ms and 60 KB a page on a busy machine), not a 300-page book
# or the thesis.
RENDER_MAX_PAGES = 60
#: Image pixels per point: 1.25 x 72 = 90 dpi grey. The report shows a passage at this
#: scale at least (10 pt text 12.5 CSS pixels high, never enlarged), so it can be read
#: on a 375 px phone (issue 47); 0.6 (43 dpi) showed the page but not its words.
RENDER_ZOOM = 1.25
_RENDER_QUALITY = 50


def render_pages(doc: pymupdf.Document) -> dict[int, bytes]:
    """Every page as a small grey JPEG, by 1-based page number."""
    images: dict[int, bytes] = {}
    matrix = pymupdf.Matrix(RENDER_ZOOM, RENDER_ZOOM)  # type: ignore[no-untyped-call]
    for index in range(doc.page_count):
        pixmap = doc[index].get_pixmap(matrix=matrix, colorspace=pymupdf.csGRAY, alpha=False)
        jpeg = pixmap.tobytes("jpeg", jpg_quality=_RENDER_QUALITY)  # type: ignore[no-untyped-call]
        images[index + 1] = bytes(jpeg)
    return images
