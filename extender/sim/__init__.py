"""The simulated cluster: `gangplank simulate`, the what-if and `make demo`.

A kube-scheduler-like driver (`driver.py`: the event loop; `kube_scheduler.py`: which pod is
tried when and what a cycle does; `faults.py`: jobs that waste what they hold and what the
lifecycle rules' evictions do; `state.py`: the cluster's state and its bookkeeping; `runs.py`,
`calls.py`: the jobs, runs and pods it moves, what it asks of an extender) replays a workload
(`workload.py`) on a cluster (`cluster.py`) through gangplank's decision core in simulated time
(`inprocess.py`), through a baseline without gangplank (`baseline.py`), or over HTTP against a
real `gangplank serve` (`http.py`, the demo); `report/` turns what happened into figures, a
summary, charts and an HTML page; `simulate.py` is the command, `progress.py` its progress.
"""
