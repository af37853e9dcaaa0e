"""Per-pod GPU utilisation from Prometheus, as NVIDIA's dcgm-exporter publishes it
(`DCGM_FI_DEV_GPU_UTIL`, 0-100, one series per GPU, with the `namespace` and `pod` of the pod
holding the GPU), read for the idle-GPU rule: per pod, the highest utilisation over the rule's
window, for the pods whose data covers the whole window. A pod whose data does not is left out of
the answer: the rule never acts on missing data.

One instant query to `/api/v1/query` at `now` (for window `w`, subquery step `r` = w/60):

    max by (ns, pod) (max_over_time(M{ns!="", pod!=""}[w]))                           # (1)
    and on (ns, pod) count by (ns, pod) (M{ns!="", pod!=""} offset w)                 # (2)
    and on (ns, pod) (count_over_time((count by (ns, pod) (M{ns!="", pod!=""}))[w:r])
                      >= scalar(count_over_time(vector(1)[w:r])))                     # (3)

(1) The busiest: the highest raw sample of any of the pod's series (a pod with several GPUs, label
    `gpu`, counts as its busiest GPU). Series without pod labels (GPUs no pod holds) are left out.
(2) The pod had data when the window opened: a pod that started, or whose series appeared (a new
    exporter), less than `w` ago has not been watched for the whole window.
(3) The pod had data all through the window: present at every step of the subquery, counted
    against the number of steps (`vector(1)` is present at each). Prometheus marks a target's
    series stale at the first failed scrape and a series stale at the first scrape that lacks it,
    so an exporter down for a while, a pod gone (or its GPUs handed to another pod) or a series
    that ended all fail this within a step; a Prometheus that was itself down for longer than its
    lookback (5 minutes by default) too.

Why not a coverage check on samples alone: `count_over_time(M[w])` against the scrape interval
needs the interval, which gangplank does not know and which differs per scrape job;
`min_over_time(timestamp(M)[w:r])` tells when the pod's data began but not whether it stopped in
between. (2) and (3) need no interval and hold for any step: the counts are of the same steps.
`max by` and `on (ns, pod)` match across the exporter's other labels, so an exporter restarted on
a new address (new `instance`) in the window does not hide the pod.

A pod name that is reused within the window (a StatefulSet's pod recreated) has one continuous
history: dcgm-exporter gives no pod UID. The caller asks only for pods running for the whole
window. Anything that goes wrong (no answer, an HTTP error, a body that is not Prometheus's JSON,
a query error) is answered `GpuUse({}, ok=False, problem=...)`, never raised.
"""

from __future__ import annotations

import http.client
import json
import math
import re
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from extender.core.model.gpu_use import GpuUse

DEFAULT_METRIC = "DCGM_FI_DEV_GPU_UTIL"
METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
STEPS = 60  # subquery steps over the window: the coverage check's resolution
MAX_BODY = 64 * 1024 * 1024


def check_names(metric: str, namespace_label: str, pod_label: str) -> str:
    """Why these names cannot go into PromQL, or "" when they can."""
    if not METRIC_NAME.fullmatch(metric):
        return f"metric {metric!r} is not a Prometheus metric name"
    for what, name in (("namespace label", namespace_label), ("pod label", pod_label)):
        if not LABEL_NAME.fullmatch(name) or name.startswith("__"):
            return f"{what} {name!r} is not a Prometheus label name"
    if namespace_label == pod_label:
        return f"namespace and pod label are both {pod_label!r}"
    return ""


def _duration(seconds: float) -> str:
    return f"{max(1, round(seconds * 1000))}ms"


class GpuUseReader:
    def __init__(
        self,
        url: str,
        metric: str = DEFAULT_METRIC,
        namespace_label: str = "namespace",
        pod_label: str = "pod",
        timeout: float = 5.0,
    ) -> None:
        problem = check_names(metric, namespace_label, pod_label)
        if problem:
            raise ValueError(problem)
        self.url = url.rstrip("/")
        self.metric = metric
        self.namespace_label = namespace_label
        self.pod_label = pod_label
        self.timeout = timeout

    def query(self, window_seconds: float) -> str:
        """The PromQL asked for a window (see the module's docstring)."""
        ns, pod = self.namespace_label, self.pod_label
        series = f'{self.metric}{{{ns}!="",{pod}!=""}}'
        by = f"({ns},{pod})"
        w, r = _duration(window_seconds), _duration(window_seconds / STEPS)
        return (
            f"max by {by} (max_over_time({series}[{w}]))"
            f" and on {by} count by {by} ({series} offset {w})"
            f" and on {by} (count_over_time((count by {by} ({series}))[{w}:{r}])"
            f" >= scalar(count_over_time(vector(1)[{w}:{r}])))"
        )

    def read(self, window_seconds: float, now: float) -> GpuUse:
        """Each pod's busiest GPU over the `window_seconds` before `now` (unix time)."""
        params = urllib.parse.urlencode({"query": self.query(window_seconds), "time": f"{now:.3f}"})
        try:
            answer = self._get(f"{self.url}/api/v1/query?{params}")
            busiest = self._busiest(answer)
        except _Failed as failed:
            return GpuUse(
                {}, ok=False, problem=f"prometheus {self.url}: {failed}", window=window_seconds
            )
        return GpuUse(busiest, window=window_seconds)

    def _get(self, url: str) -> Any:
        request = urllib.request.Request(url, headers={"Accept": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                body = response.read(MAX_BODY + 1)
        except urllib.error.HTTPError as err:
            raise _Failed(f"HTTP {err.code}{_error_of(err)}") from None
        except urllib.error.URLError as err:
            raise _Failed(f"not reachable: {err.reason}") from None
        except (OSError, http.client.HTTPException, ValueError) as err:
            raise _Failed(f"not reachable: {type(err).__name__}: {err}") from None
        if len(body) > MAX_BODY:
            raise _Failed(f"answer larger than {MAX_BODY} bytes")
        try:
            return json.loads(body)
        except ValueError:
            raise _Failed(f"answer is not JSON: {body[:80]!r}") from None

    def _busiest(self, answer: Any) -> dict[tuple[str, str], float]:
        if not isinstance(answer, dict):
            raise _Failed("answer is not a Prometheus API response")
        if answer.get("status") != "success":
            raise _Failed(f"query failed: {answer.get('errorType', '')}: {answer.get('error', '')}")
        data = answer.get("data")
        if not isinstance(data, dict) or data.get("resultType") != "vector":
            raise _Failed("answer is not an instant vector")
        busiest: dict[tuple[str, str], float] = {}
        for sample in data.get("result") or []:
            try:
                labels, (_, text) = sample["metric"], sample["value"]
                key = (labels[self.namespace_label], labels[self.pod_label])
                value = float(text)
            except (KeyError, TypeError, ValueError):
                raise _Failed(f"unexpected sample {str(sample)[:120]}") from None
            if isinstance(key[0], str) and isinstance(key[1], str) and math.isfinite(value):
                busiest[key] = value
        return busiest


class _Failed(Exception):
    """Why a read gave no data."""


def _error_of(err: urllib.error.HTTPError) -> str:
    """Prometheus's own words from an error answer (`{"errorType": ..., "error": ...}`)."""
    try:
        body = json.loads(err.read(64 * 1024))
        return f": {body['errorType']}: {body['error']}"
    except Exception:  # an error page of a proxy, or nothing: the status says enough
        return f": {err.reason}" if err.reason else ""
