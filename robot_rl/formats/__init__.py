"""Recordings and datasets in other tools' formats: rosbag2/MCAP episodes (``rosbag``), LeRobot datasets
(``lerobot``). Above ``data`` (our demo format) and ``ros.names`` (the live topics' labels); the libraries
they need come with the ``data`` extra and are imported when used."""
