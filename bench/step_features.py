"""What each guarantee and each layer of a step costs: a tool.call chain in this process,
run as lwtool runs it and with one piece switched off at a time, alternating within each
round; then with all of them off; as one fused loop that keeps only a step's work; and as
that loop with one of lwtool's layers put back at a time.

The pieces (each switched off by replacing one function for the measurement only):

- deadline: the step's timeout (a loop timer shared by the run's attempts);
- tool guard: Tool.invoke's `os._exit` guard and its sync-tool pacing (the tool still
  gets its own copy of the input);
- evidence timer: a note (StepAttemptStarted and the session's start) waits at most
  NOTE_DELAY for the next commit; off, it only rides along;
- step slots: the run's concurrency bound (an asyncio.Semaphore);
- turns: a chain lets the loop run every TURN_S (signals, timers);
- session checks: a resumed session's manifest compared with the one it started with,
  and a definition's worker identity.

"fused" is one loop over the steps that keeps only a step's work, with lwtool's own
helpers (render the input, hash it, the manifest and its hash, call the tool, check
its output, the envelope, the six events, one commit through the world): no scheduler,
no run_step or _attempt, none of the pieces above, no retries. It writes the same
events (checked: the same types in the same order), so it is the floor of lwtool's
layering, not a way to run. The Python floor (bench/python_floor.py) is the same work
written out by hand with no lwtool code.

"fused + LAYER" puts one layer back on the fused loop (LAYERS), from the bottom up: the
tool.call step kind; the evidence note and the run's record; the whole attempt
(dispatch._attempt, which holds both and the guarantees it keeps); run_step. Each
prints what it costs over the fused loop; lwtool adds the scheduler to the last.

Run: .venv/bin/python bench/step_features.py [--steps N] [--reps N]
     [--durability process|strict] [--dir DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from _generate import chain_lwir  # noqa: E402
from _timed_world import TimedWorld  # noqa: E402

from lwtool import tools as tools_module  # noqa: E402
from lwtool.canonical.plain_json import to_json  # noqa: E402
from lwtool.harness.manifests import worker_manifest  # noqa: E402
from lwtool.record import journal as journal_module  # noqa: E402
from lwtool.record import run_state as run_state_module  # noqa: E402
from lwtool.record.ids import hash_bytes, short_hash  # noqa: E402
from lwtool.runtime import dispatch as dispatch_module  # noqa: E402
from lwtool.runtime import scope as scope_module  # noqa: E402
from lwtool.runtime.interpreter import start_run  # noqa: E402
from lwtool.steps import STEP_KINDS  # noqa: E402
from lwtool.steps.inputs import step_input  # noqa: E402
from lwtool.steps.outputs import check_output  # noqa: E402
from lwtool.tools import ToolRegistry, own_copy  # noqa: E402
from lwtool.world.base import NewEvent  # noqa: E402


async def echo(args: Any) -> Any:
    return {"value": str(args.get("value"))}


class _NoDeadlines:
    def within(self, seconds: float) -> contextlib.nullcontext[None]:
        return contextlib.nullcontext()


class _NoSlots:
    async def acquire(self) -> bool:
        return True

    def release(self) -> None:
        pass


async def _unguarded_invoke(self: Any, args: Any, threads: Any, alone: bool = False,
                            context: Any = None) -> Any:
    return await self.fn(own_copy(args))


def _bare_note(self: Any, events: list[NewEvent], defer: bool = True) -> None:
    self._notes.extend(events)


def _slotless(original: Callable[[Any], None]) -> Callable[[Any], None]:
    def post_init(self: Any) -> None:
        original(self)
        self.step_slots = _NoSlots()
    return post_init


# Put back one at a time, from the bottom up (their descriptions: the docstring above).
LAYERS = (
    "step kind",  # the call and its output check through the tool.call step kind
    "note and record",  # the first three events noted, the rest recorded with them
    "attempt",  # dispatch._attempt and RunState.record: both above and the attempt's own
    "run_step",  # dispatch.run_step: the attempt, journal lookups, step slot, retry loop
)


def _fused_loop(layer: str | None = None) -> Callable[[Any], Coroutine[Any, Any, None]]:
    """Scope.execute for a chain of tool.call steps: a step's work and nothing else; with
    `layer` (one of LAYERS), that layer of lwtool's put back."""
    async def execute(self: Any) -> None:
        run = self.run
        world, run_id, durable = run.world, run.run_id, run.fsyncs
        usage = dict.fromkeys(run_state_module.SESSION_USAGE, 0)
        kind = STEP_KINDS["tool.call"]
        for sid in self.order:
            step = self.steps[sid]
            path, visit = self._start_visit(sid)
            if layer == "run_step":
                result, seq = await dispatch_module.run_step(self, sid, path, visit)
                self._completed(sid, result, seq)
                continue
            if layer == "attempt":
                output, closing, inline = await dispatch_module._attempt(
                    self, step, path, visit, 1, kind)
                committed = await run.record(closing, artifacts=inline)
                self._completed(sid, output, committed[-1].seq)
                continue
            expression_scope = self.expression_scope(sid, path, visit, 1)
            value = step_input(self, step, expression_scope, path)
            input_hash = "sha256:" + hashlib.sha256(hash_bytes(value)).hexdigest()
            manifest = worker_manifest(run.harness.harness_id, run.version_id, path,
                                       run.config_hash(step), run.tools_hash)
            name, mode = step["with"]["tool"], step["output"]
            if layer == "step kind":
                output, _ = await kind.execute(self, step, path, value, expression_scope)
            else:
                output = to_json(await run.tools.get(name).fn(own_copy(value)))
                check_output(output, mode, f"tool '{name}' output",
                             run.config_hash(mode["schema"]))
            envelope, inline = await run.envelope(output, "tool.call", mode, path)
            output_hash = "sha256:" + envelope["outputRef"].removeprefix("artifact://sha256:")
            started = [
                NewEvent("StepAttemptStarted", {"stepId": sid, "uses": "tool.call",
                                                "visit": visit, "attempt": 1,
                                                "inputHash": input_hash, "input": value},
                         path),
                NewEvent("harness.session.started", {"runId": run_id, "role": "worker",
                                                     "task": {"kind": "execute_step"},
                                                     "manifest": manifest,
                                                     "manifestHash": short_hash(manifest)},
                         path),
                NewEvent("harness.execute_step.started", {"stepPath": path,
                                                          "stepKind": "tool.call",
                                                          "inputHash": input_hash,
                                                          "toolName": name}, path),
            ]
            closing = [
                NewEvent("harness.execute_step.succeeded", {"stepPath": path,
                                                            "outputHash": output_hash,
                                                            "durationMs": 0}, path),
                NewEvent("harness.session.completed", {"runId": run_id, "usage": dict(usage)},
                         path),
                NewEvent("StepCompleted", {"stepId": sid, "uses": "tool.call", "visit": visit,
                                           "attempt": 1, "envelope": envelope}, path),
            ]
            if layer == "note and record":
                run.note(started)
                committed = await run.record(closing, artifacts=inline)
            else:
                committed = world.append(run_id, started + closing, None, inline, durable)
            self.done.add(sid)
            self.outputs[sid].append(output)
            self.last_step, self.last_seq = sid, committed[-1].seq
    return execute


_fused = _fused_loop()


PIECES: dict[str, list[tuple[Any, str, Any]]] = {
    "deadline": [(dispatch_module, "_deadlines", lambda run: _NoDeadlines())],
    "tool guard": [(tools_module.Tool, "invoke", _unguarded_invoke)],
    "evidence timer": [(run_state_module.RunState, "note", _bare_note)],
    "step slots": [(run_state_module.RunState, "__post_init__",
                    _slotless(run_state_module.RunState.__post_init__))],
    "turns": [(run_state_module.RunState, "turn_due", lambda self: False)],
    "session checks": [(journal_module.Journal, "check_session", lambda *args: None),
                       (dispatch_module, "worker_identity", lambda run, path: {})],
}
VARIANTS = ["lwtool", *PIECES, "all of them", "fused", *(f"fused + {layer}" for layer in LAYERS)]


@contextlib.contextmanager
def switched_off(variant: str) -> Iterator[None]:
    """The pieces of `variant` replaced while the block runs."""
    if variant == "fused":
        replaced = [(scope_module.Scope, "execute", _fused)]
    elif variant.startswith("fused + "):
        replaced = [(scope_module.Scope, "execute", _fused_loop(variant[len("fused + "):]))]
    elif variant == "all of them":
        replaced = [item for items in PIECES.values() for item in items]
    else:
        replaced = PIECES.get(variant, [])
    saved = [(owner, name, owner.__dict__[name]) for owner, name, _ in replaced]
    for owner, name, value in replaced:
        setattr(owner, name, value)
    try:
        yield
    finally:
        for owner, name, value in saved:
            setattr(owner, name, value)


def chain(folder: Path, durability: str, steps: int, registry: ToolRegistry
          ) -> tuple[float, list[str]]:
    """Seconds of one chain run in a new world, and its events' types."""
    world = TimedWorld(folder, durability=durability)
    started = time.perf_counter()
    result = asyncio.run(start_run(world, chain_lwir(steps, uses="tool.call"), {"seed": "x"},
                                   registry, {}))
    elapsed = time.perf_counter() - started
    assert result["status"] == "completed", result
    types = [event.type for event in world.events(result["runId"])]
    world.close()
    return elapsed, types


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--durability", choices=("process", "strict"), default="process")
    parser.add_argument("--dir", default=str(HERE.parent))
    options = parser.parse_args()
    registry = ToolRegistry()
    registry.register("echo", echo)
    figures: dict[str, list[float]] = {variant: [] for variant in VARIANTS}
    expected: list[str] | None = None
    with tempfile.TemporaryDirectory(dir=options.dir) as tmp:
        for round_ in range(options.reps + 1):  # the first round warms up, uncounted
            # each round starts one variant further on: no variant is always first
            for variant in VARIANTS[round_ % len(VARIANTS):] + VARIANTS[:round_ % len(VARIANTS)]:
                with switched_off(variant):
                    folder = Path(tmp) / f"{round_}-{VARIANTS.index(variant)}"
                    one, _ = chain(folder / "one", options.durability, 1, registry)
                    many, types = chain(folder / "many", options.durability, options.steps,
                                        registry)
                if expected is None:
                    expected = types
                elif types != expected:
                    raise SystemExit(f"{variant}: its run wrote other events than lwtool's")
                if round_:
                    figures[variant].append((many - one) / (options.steps - 1) * 1e6)
    base, fused = (statistics.median(figures[name]) for name in ("lwtool", "fused"))
    print(f"{options.steps}-step tool.call chain in this process, {options.durability} mode, "
          f"per step (medians of {options.reps} rounds):")
    for variant in VARIANTS:
        figure = statistics.median(figures[variant])
        label = variant if variant.startswith(("lwtool", "fused")) else f"without {variant}"
        saved = "" if variant == "lwtool" else f"  ({figure - fused:+.1f} us over fused)" \
            if variant.startswith("fused + ") else f"  ({base - figure:+.1f} us saved)"
        print(f"  {label:<28} {figure:6.1f} us{saved}")


if __name__ == "__main__":
    main()
