"""``ros2 launch <package> <launch file> [name:=value ...]`` where ros2cli is not installed: the same call the
``ros2 launch`` command makes (ros2launch's API over launch.LaunchService), for the launch tests.

Outside a ROS install, launch_ros imports ``composition_interfaces`` (a message package without a wheel) for its
composable-node actions only; if it is missing, a stand-in of that one module is registered first, and said
so on stderr. Our launch files use no composable nodes.
"""

from __future__ import annotations

import importlib.util
import sys
import types


def _stand_in_composition_interfaces() -> None:
    if importlib.util.find_spec("composition_interfaces") is not None:
        return
    srv = types.ModuleType("composition_interfaces.srv")
    for name in ("LoadNode", "UnloadNode", "ListNodes"):
        setattr(srv, name, type(name, (), {"Request": type("Request", (), {}), "Response": type("Response", (), {})}))
    package = types.ModuleType("composition_interfaces")
    package.srv = srv  # type: ignore[attr-defined]
    sys.modules.update({"composition_interfaces": package, "composition_interfaces.srv": srv})
    print("ros2_launch: composition_interfaces is not installed; using a stand-in (no composable nodes)",
          file=sys.stderr, flush=True)


def main(argv: list[str]) -> int:
    package, launch_file, *arguments = argv
    _stand_in_composition_interfaces()
    from ros2launch.api import get_share_file_path_from_package, launch_a_launch_file

    path = get_share_file_path_from_package(package_name=package, file_name=launch_file)
    return launch_a_launch_file(launch_file_path=path, launch_file_arguments=arguments)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
