"""Kubernetes' name rules, as its API server validates them (apimachinery's validation): match
with `fullmatch`."""

from __future__ import annotations

import re

# IsDNS1123Label: a namespace, a Service; at most 63 characters.
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
# IsDNS1123Subdomain: a node, a ConfigMap, most objects; labels of any length, 253 in all.
DNS_SUBDOMAIN = re.compile(
    r"(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
)
