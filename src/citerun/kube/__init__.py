"""The one Kubernetes client of citerun: the API calls the operator, the web's cluster backend
and ``citerun submit``/``status``/``report`` make, on the core alone."""
