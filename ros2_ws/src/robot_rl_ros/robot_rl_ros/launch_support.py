"""Helpers for our launch files (imported only inside ``ros2 launch``: needs launch and launch_ros)."""

from __future__ import annotations

from typing import Any

from launch.actions import DeclareLaunchArgument, SetEnvironmentVariable
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from robot_rl_ros.specs import ENVIRONMENT, SPECS, share_dir


def arg(name: str, default: str, description: str) -> DeclareLaunchArgument:
    return DeclareLaunchArgument(name, default_value=default, description=description)


def value(context: Any, name: str) -> str:
    return LaunchConfiguration(name).perform(context)


def flag(context: Any, name: str) -> bool:
    return value(context, name).strip().lower() in ("1", "true", "yes", "on")


def names(context: Any, name: str) -> list[str]:
    return [v.strip() for v in value(context, name).split(",") if v.strip()]


def environment() -> list[SetEnvironmentVariable]:
    return [SetEnvironmentVariable(k, v) for k, v in ENVIRONMENT.items()]


def node(spec: str, namespace: str, name: str | None = None, **overrides: Any) -> Node:
    """A ``launch_ros`` Node from the spec shared with the tests; ``overrides`` become parameters."""
    return Node(**SPECS[spec].launch_kwargs(share_dir(), namespace, name, overrides))
