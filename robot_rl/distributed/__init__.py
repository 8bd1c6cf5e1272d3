"""Actor/learner split over gRPC (``pip install 'robot_rl[dist]'``): see docs/distributed.md.

    Learner (learner.py)   trains; serves link.proto's ``Learner`` service (server.py); makes received
                           transitions durable in an append-only, checksummed replay log (replay_log.py) and
                           acknowledges them only then (ingest.py); pushes versioned actor weights.
    Actor (actor.py)       runs the control loop; ``ActorClient`` (client.py) streams records, keeps what
                           is not yet acknowledged, reconnects with back-off, resends, and follows the
                           weight stream.

Importing this package needs nothing beyond the core; the modules above need grpcio + grpcio-tools.
"""

from robot_rl.distributed.config import ActorConfig, LearnerConfig, LinkConfig


def available() -> bool:
    """True when the gRPC extra is installed."""
    try:
        import grpc  # noqa: F401
        import grpc_tools  # noqa: F401
    except ImportError:
        return False
    return True


__all__ = ["ActorConfig", "LearnerConfig", "LinkConfig", "available"]
