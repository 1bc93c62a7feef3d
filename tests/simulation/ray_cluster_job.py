"""Run a fedfit config on a Ray cluster of several nodes emulated on this machine (127.0.0.1).

``python ray_cluster_job.py NODES CONFIG.json RUN_DIR``: starts ``NODES`` one-CPU Ray nodes
(``ray.cluster_utils.Cluster``: each its own raylet, object store and workers), runs the config
with ``simulation.ray_address`` set to the head's address, prints the node ids on stdout as
JSON, and removes the nodes. Run as a separate process (its own session) by
``test_ray_cluster.py``, which kills the whole process group if it overruns.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ray.cluster_utils import Cluster

from fedfit.config import parse_config
from fedfit.runner import run
from fedfit.simulation.ray_executor import loopback_only

NODE_WAIT_S = 180.0


def main(nodes: int, config_path: Path, run_dir: Path) -> None:
    cluster = Cluster()
    try:
        with loopback_only():
            for _ in range(nodes):  # the first is the head
                cluster.add_node(wait=False, num_cpus=1, node_ip_address="127.0.0.1", include_dashboard=False)
        cluster.wait_for_nodes(timeout=NODE_WAIT_S)
        raw = json.loads(config_path.read_text())
        raw["simulation"]["ray_address"] = cluster.address
        run(parse_config(raw), run_dir)
        print(json.dumps({"address": cluster.address, "node_ids": [n.node_id for n in cluster.list_all_nodes()]}))
    finally:
        for node in [*cluster.worker_nodes, *([cluster.head_node] if cluster.head_node else [])]:
            cluster.remove_node(node, allow_graceful=False)  # a graceful stop can wait for ever
        cluster.shutdown()  # forgets the cluster's address (no nodes are left to stop)


if __name__ == "__main__":
    main(int(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
