"""The wire schema (``link.proto``), compiled at import, plus the gRPC plumbing both ends share.

Why compile at import instead of committing ``link_pb2.py``: generated protobuf code embeds the protoc version
and refuses to run on an older (or much newer) protobuf runtime, and ``_pb2_grpc.py`` pins the grpcio
version it was generated with. ``grpc.protos_and_services`` (grpcio-tools) compiles the one ``.proto`` in
~50 ms with the protoc that matches the installed runtime: no generated code to keep in sync, no version
skew. The cost: grpcio-tools is a runtime dependency of the ``dist`` extra.

``pb``: messages (``pb.Record``, ``pb.PushRequest``, ...); ``services``: ``LearnerStub``, ``LearnerServicer``,
``add_LearnerServicer_to_server``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

try:
    import grpc
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "robot_rl.distributed needs gRPC: pip install 'robot_rl[dist]' (grpcio, grpcio-tools, protobuf)"
    ) from e

from robot_rl.distributed.config import LinkConfig

PROTOCOL_VERSION = 1
PROTO_FILE = Path(__file__).with_name("link.proto")
AUTH_METADATA_KEY = "authorization"


def _compile() -> tuple[ModuleType, ModuleType]:
    root = str(PROTO_FILE.parents[2])  # the folder holding the robot_rl package
    added = root not in sys.path
    if added:
        sys.path.insert(0, root)
    try:
        return grpc.protos_and_services("robot_rl/distributed/link.proto")
    except (ImportError, ModuleNotFoundError) as e:
        raise ImportError(
            f"cannot compile {PROTO_FILE}: grpcio-tools is missing or broken ({e}); "
            "pip install 'robot_rl[dist]'"
        ) from e
    finally:
        if added:
            sys.path.remove(root)


pb, services = _compile()


def auth_metadata(token: str) -> tuple[tuple[str, str], ...]:
    return ((AUTH_METADATA_KEY, f"Bearer {token}"),)


def channel_options(max_message_mb: int, backoff_max_s: float) -> list[tuple[str, int]]:
    """Message size limits, fast reconnects (the actor has its own back-off), keepalive (dead peers)."""
    n = max_message_mb * 1024 * 1024
    return [
        ("grpc.max_send_message_length", n),
        ("grpc.max_receive_message_length", n),
        ("grpc.initial_reconnect_backoff_ms", 100),
        ("grpc.min_reconnect_backoff_ms", 100),
        ("grpc.max_reconnect_backoff_ms", max(100, int(backoff_max_s * 1000))),
        ("grpc.keepalive_time_ms", 10_000),
        ("grpc.keepalive_timeout_ms", 5_000),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.max_pings_without_data", 0),
    ]


def server_options(max_message_mb: int) -> list[tuple[str, int]]:
    n = max_message_mb * 1024 * 1024
    return [
        ("grpc.max_send_message_length", n),
        ("grpc.max_receive_message_length", n),
        ("grpc.so_reuseport", 0),  # a second learner on the same port must fail, not share it
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.min_ping_interval_without_data_ms", 5_000),
        ("grpc.http2.max_ping_strikes", 0),
    ]


def format_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"


def is_loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class LinkRefused(RuntimeError):
    """The learner refused this actor (token, spec or protocol mismatch, malformed data): retrying won't
    help."""


def make_channel(link: LinkConfig, backoff_max_s: float) -> grpc.Channel:
    address = format_address(link.host, link.port)
    options = channel_options(link.max_message_mb, backoff_max_s)
    if link.tls_ca is None:
        return grpc.insecure_channel(address, options=options)
    if link.tls_server_name:
        options.append(("grpc.ssl_target_name_override", link.tls_server_name))  # type: ignore[arg-type]
    creds = grpc.ssl_channel_credentials(root_certificates=link.tls_ca.read_bytes())
    return grpc.secure_channel(address, creds, options=options)
