"""citerun's Kubernetes operator (see docs/architecture.md, "Layers")."""
