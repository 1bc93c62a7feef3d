"""Flower messages and contexts built outside a running Flower app (for calling handlers directly)."""

from __future__ import annotations

import time

from flwr.app import Context, Message, Metadata, RecordDict
from flwr.app.message.message import make_message


def message(kind: str, content: RecordDict, *, src: int = 0, dst: int = 1) -> Message:
    """A message of ``kind`` from node ``src`` to node ``dst``."""
    meta = Metadata(run_id=1, message_id=f"{kind}-{src}-{dst}", src_node_id=src, dst_node_id=dst,
                    reply_to_message_id="", group_id="", created_at=time.time(), ttl=3600.0, message_type=kind)
    return make_message(meta, content)


def context(partition_id: int) -> Context:
    """A node's context with its partition id."""
    return Context(run_id=1, node_id=100 + partition_id, node_config={"partition-id": partition_id},
                   state=RecordDict(), run_config={})
