"""Speed of the verification pipeline: ``citerun verify`` end to end (``verify``), parse
and embed (``parse_embed``), the embedded judge in a worker-like process (``judge``), and
the synthetic large thesis they read (``large_thesis``)."""
