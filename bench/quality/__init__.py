"""Quality on real data: retrieval and the judge on SciFact (``scifact``), reference
lists, markers and mapping of real PDFs against hand-made truth (``realpdf``, ``truth``,
``layout``) and the same on fresh held-out PDFs (``heldout``)."""
