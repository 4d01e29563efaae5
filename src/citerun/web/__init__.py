"""The web service (``citerun serve``): a page and a JSON API for the people who write and
supervise theses. It sits beside the CLI, above the flow: the core, the pipeline, the
worker and the operator never import it (import-linter contracts in ``pyproject.toml``).
See ``docs/architecture.md`` ("The web layer") and ``docs/security.md`` ("The web service").
"""
