"""citerun's Kubernetes operator, installed as ``citerun.operator`` (see
docs/architecture.md, "Layers")."""

if __name__ == "operator":  # pragma: no cover - only when the import path is wrong
    raise ImportError(
        "citerun: the repository's operator/ folder was imported as the top-level module "
        "'operator', shadowing the standard library's operator module, because the "
        "repository root is on sys.path. Run Python with -P (or PYTHONSAFEPATH=1), or use "
        "the `citerun` console script, e.g. `python3 -P -m citerun --help`.")
