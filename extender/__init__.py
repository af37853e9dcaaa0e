"""gangplank: a Kubernetes scheduler extender for gangs, queues and topology-aware placement."""

__version__ = "0.1.0"
