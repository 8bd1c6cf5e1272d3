"""robot_rl's ROS 2 nodes. The logic lives in the ``robot_rl`` library (``robot_rl.ros``,
``robot_rl.safety``); these modules only read parameters, build the library objects and spin."""
