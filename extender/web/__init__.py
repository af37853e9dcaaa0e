"""The HTTP adapter: parse kube-scheduler's request, call the core, write the answer."""
