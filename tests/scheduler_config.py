"""kube-scheduler's own validation of a KubeSchedulerConfiguration, for the parts gangplank uses.

Transcribed from `pkg/scheduler/apis/config/validation/validation.go` (ValidateKubeScheduler-
Configuration, validateExtenders) plus what the extender needs to be reachable: verbs that exist
as routes and a urlPrefix that matches where the sidecar listens.
"""

from __future__ import annotations

import re
from typing import Any

QUALIFIED_NAME = re.compile(
    r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
DURATION = re.compile(r"^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$")
# kube-scheduler's in-tree plugins that score nodes (pkg/scheduler/framework/plugins/names), and
# the extension points a profile's `plugins` may name (config.Plugins).
SCORE_PLUGINS = {
    "TaintToleration",
    "NodeAffinity",
    "NodeResourcesFit",
    "NodeResourcesBalancedAllocation",
    "ImageLocality",
    "InterPodAffinity",
    "PodTopologySpread",
    "VolumeBinding",
    "DynamicResources",
}
EXTENSION_POINTS = {
    "preEnqueue",
    "queueSort",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
    "multiPoint",
}


def validate_scheduler_config(config: dict[str, Any], routes: set[str]) -> list[str]:
    errors: list[str] = []
    if config.get("apiVersion") != "kubescheduler.config.k8s.io/v1":
        errors.append(
            f"apiVersion {config.get('apiVersion')!r} is not kubescheduler.config.k8s.io/v1"
        )
    if config.get("kind") != "KubeSchedulerConfiguration":
        errors.append("kind must be KubeSchedulerConfiguration")
    election = config.get("leaderElection") or {}
    if election.get("leaderElect") and election.get("resourceLock", "leases") != "leases":
        errors.append('leaderElection.resourceLock must be "leases"')
    profiles = config.get("profiles") or []
    if not profiles:
        errors.append("profiles: Required value")
    names = [p.get("schedulerName") for p in profiles]
    if len(names) != len(set(names)):
        errors.append("profiles: duplicate schedulerName")
    for i, profile in enumerate(profiles):
        if not profile.get("schedulerName"):
            errors.append(f"profiles[{i}].schedulerName: Required value")
        errors += _percentage(
            f"profiles[{i}].percentageOfNodesToScore", profile.get("percentageOfNodesToScore")
        )
        for point, sets in (profile.get("plugins") or {}).items():
            if point not in EXTENSION_POINTS:
                errors.append(f"profiles[{i}].plugins.{point}: unknown extension point")
                continue
            for kind, listed in (sets or {}).items():
                for entry in listed or []:
                    name = entry.get("name")
                    if point == "score" and name != "*" and name not in SCORE_PLUGINS:
                        errors.append(
                            f"profiles[{i}].plugins.score.{kind}: {name!r} is no score plugin"
                        )
    errors += _percentage("percentageOfNodesToScore", config.get("percentageOfNodesToScore"))
    binders = 0
    managed: set[str] = set()
    for i, extender in enumerate(config.get("extenders") or []):
        path = f"extenders[{i}]"
        if extender.get("prioritizeVerb") and (extender.get("weight") or 0) <= 0:
            errors.append(f"{path}.weight: must have a positive weight applied to it")
        if extender.get("bindVerb"):
            binders += 1
        for verb_key in ("filterVerb", "prioritizeVerb", "preemptVerb", "bindVerb"):
            verb = extender.get(verb_key)
            if verb and verb not in routes:
                errors.append(f"{path}.{verb_key}: {verb!r} is not a route of gangplank")
        timeout = str(extender.get("httpTimeout", "5s"))
        if not DURATION.match(timeout):
            errors.append(f"{path}.httpTimeout: {timeout!r} is not a duration")
        for j, resource in enumerate(extender.get("managedResources") or []):
            name = resource.get("name", "")
            if (
                not QUALIFIED_NAME.match(name)
                or "/" not in name
                or name.startswith("kubernetes.io/")
            ):
                errors.append(
                    f"{path}.managedResources[{j}].name: {name!r} is not an extended resource name"
                )
            if name in managed:
                errors.append(f"{path}.managedResources[{j}].name: duplicate")
            managed.add(name)
    if binders > 1:
        errors.append(f"extenders: found {binders} extenders implementing bind; only one can")
    return errors


def _percentage(path: str, value: Any) -> list[str]:
    if value is not None and not 0 <= int(value) <= 100:
        return [f"{path}: {value} not in valid range [0-100]"]
    return []
