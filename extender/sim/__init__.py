"""The simulated cluster: `gangplank simulate`, the what-if and `make demo`.

A kube-scheduler-like driver (`driver.py`) replays a workload (`workload.py`) on a cluster
(`cluster.py`) through gangplank's decision core in simulated time (`inprocess.py`), through a
baseline without gangplank (`baseline.py`), or over HTTP against a real `gangplank serve`
(`http.py`, the demo); `report.py` turns what happened into figures, plots and an HTML page.
"""
