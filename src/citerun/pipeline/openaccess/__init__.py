"""Open-access copies of cited works the writer has no PDF of (issue 51).

For each such work, :func:`find_source` looks up its identifiers (:class:`WorkIds`: a
DOI, an arXiv id, a PMID/PMCID from the writer's library or the thesis's reference
entry, else its title, first author and year) at the open scholarly services, in the
order :mod:`.find` justifies (arXiv, Unpaywall, OpenAlex, Europe PMC, Semantic Scholar,
the library's URL; abstracts from what is in hand, else Crossref), and fetches the first
open PDF safely through :mod:`citerun.pipeline.fetch` (HTTPS, every address and redirect
checked, size and time caps, ``%PDF`` checked), within each service's published rate
(:class:`Session`). What it found is a :class:`Found`: a PDF, an abstract or nothing,
with every :class:`Attempt` made. All of it is configured by :class:`OpenAccessSettings`
and nothing is sent anywhere unless ``enabled``. No Postgres: a run stores what it gets
(see docs/openaccess.md).

    async with openaccess.Session(settings) as session:
        found = await openaccess.find_source(openaccess.WorkIds.from_library_item(item),
                                             session)
"""

from citerun.pipeline.openaccess.find import find_source
from citerun.pipeline.openaccess.ids import WorkIds
from citerun.pipeline.openaccess.model import Attempt, Found
from citerun.pipeline.openaccess.session import Session
from citerun.pipeline.openaccess.settings import OpenAccessSettings

__all__ = ["Attempt", "Found", "OpenAccessSettings", "Session", "WorkIds", "find_source"]
