"""Command safety for real arms: workspace box, step limits, watchdog, latched e-stop, driver health.

Pure Python (numpy only), so the rules are unit-tested without ROS; the ROS 2 robot bridge drives it.
"""

from robot_rl.safety.config import SafetyLimits
from robot_rl.safety.filter import COUNTERS, SafetyFilter, Sent

__all__ = ["COUNTERS", "SafetyFilter", "SafetyLimits", "Sent"]
