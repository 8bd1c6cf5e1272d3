"""The QoS profiles our interfaces use (defined once).

SENSOR (best effort, keep last 1: only the newest matters, and a slow reader never works through a
backlog of stale states) subscribers match reliable *and* best-effort publishers, so every state
and image input uses it. CMD (reliable, keep last 1) carries commands. LATCH (reliable, transient local,
depth 1) carries e-stop and driver status (UR's io_and_status_controller topics are latched).
"""

from __future__ import annotations

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

SENSOR = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.BEST_EFFORT,
                    durability=DurabilityPolicy.VOLATILE)
CMD = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE,
                 durability=DurabilityPolicy.VOLATILE)
EVENTS = QoSProfile(depth=20, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE,
                    durability=DurabilityPolicy.VOLATILE)
"""Reliable with a queue: per-step records nobody may miss (executed actions, status)."""
LATCH = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE,
                   durability=DurabilityPolicy.TRANSIENT_LOCAL)
