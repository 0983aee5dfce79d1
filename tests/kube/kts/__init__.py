"""kts: a small Kubernetes API server for tests (agents.x-k8s.io Sandboxes, pods, exec)."""
