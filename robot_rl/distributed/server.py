"""The learner's gRPC endpoint: token check, spec handshake, transition pushes, weight stream."""

from __future__ import annotations

import hmac
import json
import logging
import threading
import time
from concurrent import futures
from typing import Any

import grpc

from robot_rl.distributed.codec import RecordError
from robot_rl.distributed.config import LinkConfig
from robot_rl.distributed.ingest import Ingestor
from robot_rl.distributed.protocol import (
    AUTH_METADATA_KEY,
    PROTOCOL_VERSION,
    format_address,
    is_loopback,
    pb,
    server_options,
    services,
)
from robot_rl.distributed.spec import spec_diff

log = logging.getLogger("robot_rl.distributed")


class WeightsBoard:
    """The latest published weights; subscribers block until a newer version exists (older ones are skipped:
    only the newest weights matter)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.latest: Any = None
        self.closed = False

    def publish(self, message: Any) -> None:
        with self._cond:
            self.latest = message
            self._cond.notify_all()

    def wait_newer(self, version: int, timeout: float) -> Any:
        with self._cond:
            self._cond.wait_for(
                lambda: self.closed or (self.latest is not None and self.latest.version > version), timeout
            )
            latest = self.latest
            return latest if latest is not None and latest.version > version else None

    def close(self) -> None:
        with self._cond:
            self.closed = True
            self._cond.notify_all()


class LinkServer(services.LearnerServicer):
    """Serves ``link.proto``'s ``Learner`` service over ``ingestor``."""

    def __init__(
        self,
        link: LinkConfig,
        token: str,
        spec: dict[str, Any],
        agent_config_json: str,
        ingestor: Ingestor,
        max_actors: int,
        learner_id: str,
    ) -> None:
        self.link = link
        self._token = f"Bearer {token}".encode()
        self.spec = spec
        self.agent_config_json = agent_config_json
        self.ingestor = ingestor
        self.learner_id = learner_id
        self.board = WeightsBoard()
        self.stop_requested = False
        self.hold = False
        self.auth_failures = 0
        self.refused_specs = 0
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=2 * max_actors + 4, thread_name_prefix="link"),
            options=server_options(link.max_message_mb),
            maximum_concurrent_rpcs=4 * max_actors + 8,
        )
        services.add_LearnerServicer_to_server(self, self._server)
        self.port = 0

    # ------------------------------------------------------------------------------------- lifecycle
    def start(self) -> int:
        address = format_address(self.link.host, self.link.port)
        if self.link.tls_cert is not None and self.link.tls_key is not None:
            creds = grpc.ssl_server_credentials(
                [(self.link.tls_key.read_bytes(), self.link.tls_cert.read_bytes())]
            )
            self.port = self._server.add_secure_port(address, creds)
        else:
            if not is_loopback(self.link.host):
                log.warning(
                    "learner listens on %s without TLS: the token and the data cross the network in "
                    "clear text (set --link.tls-cert/--link.tls-key)",
                    self.link.host,
                )
            self.port = self._server.add_insecure_port(address)
        if self.port == 0:
            raise OSError(f"learner: cannot listen on {address} (in use or not a local address)")
        self._server.start()
        log.info(
            "learner %s listening on %s (%s)",
            self.learner_id[:8],
            format_address(self.link.host, self.port),
            "TLS" if self.link.tls_cert else "plaintext",
        )
        return self.port

    def stop(self, grace_s: float = 1.0) -> None:
        self.board.close()
        self._server.stop(grace_s).wait(grace_s + 1.0)

    # ----------------------------------------------------------------------------------------- checks
    def _authorize(self, context: grpc.ServicerContext, method: str) -> None:
        sent = dict(context.invocation_metadata()).get(AUTH_METADATA_KEY, "")
        if not hmac.compare_digest(str(sent).encode(), self._token):
            self.auth_failures += 1
            log.warning("refused %s from %s: missing or wrong token", method, context.peer())
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong token")

    # ------------------------------------------------------------------------------------------- RPCs
    def Hello(self, request: Any, context: grpc.ServicerContext) -> Any:
        self._authorize(context, "Hello")
        if request.protocol_version != PROTOCOL_VERSION:
            context.abort(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"protocol version {request.protocol_version} != learner's {PROTOCOL_VERSION}",
            )
        try:
            actor_spec = json.loads(request.spec_json)
        except ValueError:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "spec_json is not JSON")
        diff = spec_diff(actor_spec, self.spec)
        if diff:
            self.refused_specs += 1
            message = f"actor {request.actor_id!r} does not match the learner's spec: " + "; ".join(diff)
            log.error("refused %s from %s: %s", "Hello", context.peer(), message)
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, message)
        if not request.actor_id or not request.session:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                          "Hello lacks the actor_id or the actor process id: an actor of another robot_rl version?")
        acked = self.ingestor.hello(request.actor_id, request.session, request.resume_from)
        log.info(
            "actor %s (session %s) connected from %s; acked up to seq %d",
            request.actor_id,
            request.session[:8],
            context.peer(),
            acked,
        )
        latest = self.board.latest
        return pb.HelloReply(
            protocol_version=PROTOCOL_VERSION,
            acked_seq=acked,
            agent_config_json=self.agent_config_json,
            weights_version=latest.version if latest is not None else 0,
            stop=self.stop_requested,
            learner_id=self.learner_id,
        )

    def Push(self, request: Any, context: grpc.ServicerContext) -> Any:
        self._authorize(context, "Push")
        stats = {f.name: int(v) for f, v in request.stats.ListFields()}
        try:
            result = self.ingestor.push(request.actor_id, request.session, request.records, stats)
        except KeyError as e:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(e.args[0]))
        except RecordError as e:
            log.error("refused a push of actor %s: %s", request.actor_id, e)
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"malformed record: {e}")
        return pb.PushReply(
            acked_seq=result.acked,
            expected_seq=result.expected,
            duplicates=result.duplicates,
            stop=self.stop_requested,
            hold=self.hold,
        )

    def SubscribeWeights(self, request: Any, context: grpc.ServicerContext) -> Any:
        self._authorize(context, "SubscribeWeights")
        have = request.have_version
        while context.is_active() and not self.board.closed:
            message = self.board.wait_newer(have, timeout=0.5)
            if message is not None:
                have = message.version
                yield message

    def publish(self, version: int, updates: int, state: bytes) -> None:
        self.board.publish(
            pb.Weights(version=version, learner_updates=updates, publish_time=time.time(), state=state)
        )
