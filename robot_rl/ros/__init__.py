"""ROS 2 side of robot_rl: the environment contract over ROS 2, and the library code behind our nodes.

Pure modules (no rclpy; work everywhere): ``names`` (topics, named-vector labels), ``hardware`` (typed
hardware configs), ``spec_env`` (a ROS arm's contract without ROS), ``images``, ``state``, ``kinematics``,
``mux``, ``teleop``, ``actor`` (the actor loop and its policy/learner registries). ``sim_core`` needs MuJoCo.
Modules importing rclpy (imported only where ROS 2 is installed): ``qos``, ``messages``, ``runtime``,
``commands``, ``gripper``, ``bridge``, ``camera``, ``env``, ``sim_robot``. This file imports nothing.
"""
