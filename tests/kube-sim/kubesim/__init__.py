"""kube-sim: a Kubernetes API server stand-in for tests (standard library only)."""
