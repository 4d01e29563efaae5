"""Benches that need a cluster: the operator autoscaling real worker processes on a test
control plane (``autoscaler``), and the real single-node cluster's figures (``node``)."""
