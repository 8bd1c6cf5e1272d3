"""robot_rl: sample-efficient RL for real robot arms. The core imports with numpy + torch (+ gymnasium) only."""

__version__ = "0.1.0"
