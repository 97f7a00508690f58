"""`lwtool worker --metrics-port N`: Prometheus metrics (prometheus-client) and a health
check over HTTP on 127.0.0.1.

- `GET /metrics`: lwtool_runs_claimed_total, lwtool_branches_claimed_total,
  lwtool_runs_ended_total{state}, lwtool_steps_completed_total,
  lwtool_steps_failed_total (a step's last attempt failed),
  lwtool_step_attempts_failed_total, lwtool_attempts_in_flight,
  lwtool_claim_latency_seconds (a run's wait from enqueue to claim),
  lwtool_heartbeat_age_seconds, lwtool_runs_in_hand, lwtool_branches_in_hand, and
  lwtool_queue_depth{queue,state} and lwtool_world_up (read from the world at each
  scrape, waited on for at most DEPTH_WAIT seconds: while the world is away a scrape gets
  the last figures at once and lwtool_world_up 0, never Prometheus's scrape timeout).
- `GET /healthz`: 200 `ok` while the worker's heartbeat reaches the world, else 503
  with the reason.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DEPTH_WAIT = 1.0  # seconds a scrape waits for the world's queue depths
DEPTH_EVERY = 1.0  # seconds at least between two reads (scrapes in between share one)


class WorkerMetrics:
    def __init__(self, depths: Callable[[], dict[str, dict[str, int]]],
                 beat_every: float) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.registry = registry = CollectorRegistry()
        self.beat_every = beat_every
        self.last_beat = time.monotonic()
        self.last_error: str | None = None
        self.runs_claimed = Counter("lwtool_runs_claimed", "Runs this worker claimed.",
                                    registry=registry)
        self.branches_claimed = Counter("lwtool_branches_claimed", "Parallel branches this "
                                        "worker claimed.", registry=registry)
        self.runs_ended = Counter("lwtool_runs_ended", "Runs this worker ended, by how.",
                                  ["state"], registry=registry)
        self.steps_completed = Counter("lwtool_steps_completed", "Steps completed here.",
                                       registry=registry)
        self.steps_failed = Counter("lwtool_steps_failed", "Steps whose last attempt failed "
                                    "here.", registry=registry)
        self.attempts_failed = Counter("lwtool_step_attempts_failed", "Step attempts that "
                                       "failed here (retried or not).", registry=registry)
        self.in_flight = Gauge("lwtool_attempts_in_flight", "Step attempts executing here.",
                               registry=registry)
        self.claim_latency = Histogram(
            "lwtool_claim_latency_seconds", "A run's wait from enqueue to its claim.",
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300),
            registry=registry)
        Gauge("lwtool_heartbeat_age_seconds", "Seconds since the worker's last heartbeat "
              "reached the world.", registry=registry).set_function(self.heartbeat_age)
        self.runs_in_hand = Gauge("lwtool_runs_in_hand", "Runs this worker executes now.",
                                  registry=registry)
        self.branches_in_hand = Gauge("lwtool_branches_in_hand", "Branches this worker "
                                      "executes now.", registry=registry)
        registry.register(_QueueDepth(depths, lambda: self.last_error is None))
        self._flying: set[tuple[str, str]] = set()
        self._guard = threading.Lock()

    def heartbeat_age(self) -> float:
        return time.monotonic() - self.last_beat

    def beat(self, error: str | None = None) -> None:
        """A heartbeat reached the world (`error`: it did not, and why)."""
        self.last_error = error
        if error is None:
            self.last_beat = time.monotonic()

    def health(self) -> str | None:
        """None while healthy, else why not."""
        if self.heartbeat_age() > 2 * self.beat_every + 1:
            why = f": {self.last_error}" if self.last_error else ""
            return f"no heartbeat reached the world for {self.heartbeat_age():.1f} s{why}"
        return None

    def committed(self, run_id: str, events: Iterable[Any]) -> None:
        """Count the steps and attempts of events this worker committed."""
        with self._guard:
            for event in events:
                key = (run_id, event.step_path or "")
                if event.type == "StepAttemptStarted":
                    self._flying.add(key)
                elif event.type == "StepCompleted":
                    self.steps_completed.inc()
                    self._flying.discard(key)
                elif event.type == "StepAttemptFailed":
                    self.attempts_failed.inc()
                    if (event.payload or {}).get("final"):
                        self.steps_failed.inc()
                    self._flying.discard(key)
            self.in_flight.set(len(self._flying))

    def serve(self, port: int, warn: Callable[[str], None] | None = None
              ) -> ThreadingHTTPServer:
        """Serve /metrics and /healthz on 127.0.0.1:`port` from a thread (port 0: any
        free one; the server's `server_port` says which). A scraper that hangs up is
        nothing to report; any other failure of a request goes to `warn` as one line,
        never as a traceback on stderr."""
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        metrics = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                if self.path.split("?")[0] == "/metrics":
                    self._send(200, generate_latest(metrics.registry), CONTENT_TYPE_LATEST)
                elif self.path.split("?")[0] == "/healthz":
                    why = metrics.health()
                    self._send(503 if why else 200, (why or "ok").encode() + b"\n",
                               "text/plain; charset=utf-8")
                else:
                    self._send(404, b"not found: /metrics or /healthz\n", "text/plain")

            def _send(self, status: int, body: bytes, kind: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:  # no line per scrape on stderr
                pass

        server = _QuietServer(("127.0.0.1", port), Handler)
        server.warn = warn
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, name="lwtool metrics",
                         daemon=True).start()
        return server


class _QuietServer(ThreadingHTTPServer):
    warn: Callable[[str], None] | None = None

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        exc = sys.exc_info()[1]
        if isinstance(exc, ConnectionError):  # the scraper hung up
            return
        if self.warn is not None:
            self.warn(f"metrics request from {client_address[0]} failed: "
                      f"{type(exc).__name__}: {exc}")


class _QueueDepth:
    """lwtool_queue_depth{queue,state} and lwtool_world_up, read from the world when
    scraped by one reader thread at a time; a scrape waits DEPTH_WAIT seconds at most and
    otherwise serves the last figures."""

    def __init__(self, depths: Callable[[], dict[str, dict[str, int]]],
                 beating: Callable[[], bool]) -> None:
        self.depths, self.beating = depths, beating
        self.last: dict[str, dict[str, int]] = {}
        self.read_ok, self.read_at = True, -DEPTH_EVERY
        self._reading: threading.Event | None = None
        self._guard = threading.Lock()

    def _read(self, done: threading.Event) -> None:
        try:
            self.last, self.read_ok = self.depths(), True
            self.read_at = time.monotonic()
        except Exception:  # noqa: BLE001 - the world away: the last figures, flagged
            self.read_ok = False
        finally:
            with self._guard:
                self._reading = None
            done.set()

    def _refresh(self) -> bool:
        """Read the depths (waiting DEPTH_WAIT at most): whether the read answered. A
        read that answered less than DEPTH_EVERY seconds ago serves again: a burst of
        scrapes costs the world one read, not one each."""
        with self._guard:
            done = self._reading
            if done is None and self.read_ok and \
                    time.monotonic() - self.read_at < DEPTH_EVERY:
                return True
            if done is None:
                done = self._reading = threading.Event()
                threading.Thread(target=self._read, args=(done,), name="lwtool depths",
                                 daemon=True).start()
        return done.wait(DEPTH_WAIT)

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        answered = self._refresh()
        family = GaugeMetricFamily("lwtool_queue_depth", "Runs on each queue of the world "
                                   "that have not ended, by state (the last figures read "
                                   "while lwtool_world_up is 0).", labels=["queue", "state"])
        for queue, states in sorted(self.last.items()):
            for state in ("queued", "claimed", "waiting"):
                family.add_metric([queue, state], states.get(state, 0))
        yield family
        up = answered and self.read_ok and self.beating()
        yield GaugeMetricFamily("lwtool_world_up", "1 while the world (the database) "
                                "answers this worker's reads and heartbeats, else 0.",
                                value=1 if up else 0)
