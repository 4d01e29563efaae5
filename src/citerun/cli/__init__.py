"""The ``citerun`` command line: its commands (``main``), ``verify`` on one machine, the
cluster client and the ``--fail-on`` gate."""
