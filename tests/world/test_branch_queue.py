"""The branch queue against a real PostgreSQL: a claim takes at most as many branches as
it asks for (a worker never holds more than its slots), whichever plan the server
picks; the owner's statement queues a group, claims those it has slots for at once,
claims no more of its queued ones than it asks, and writes ends; a claim leaves the
worker's own runs' branches to their owners."""

from __future__ import annotations

from pathlib import Path

from lwtool.world.base import NewEvent
from lwtool.world.postgres import PostgresWorld
from lwtool.world.postgres_branches import BranchQueue


def _states(world: PostgresWorld, run_id: str) -> dict[str, tuple[str, str | None]]:
    return {r[0]: (r[1], r[2]) for r in world._read(
        "SELECT prefix, state, worker FROM lwtool.branches WHERE run_id = %s", (run_id,))}


def _fresh(count: int, mine: int) -> list[tuple[str, list[str], int, bool, None, bool]]:
    return [(f"fan[{n}].", ["fan"], n, False, None, n < mine) for n in range(count)]


def test_claims_take_no_more_branches_than_asked(postgres_url: str, tmp_path: Path) -> None:
    world = PostgresWorld(postgres_url, tmp_path)
    try:
        world.register_version("v", {"steps": []})
        for run_id in ("r", "s"):
            world.create_run(run_id, "v", {}, {}, [NewEvent("RunStarted", {})])
        queue = BranchQueue(world)
        # the owner of r: 10 branches queued, 3 claimed for it in the same statement
        got = queue.pump("r", "owner", 30.0, [], _fresh(10, 3), [], 0)
        assert sorted(t.prefix for t in got) == ["fan[0].", "fan[1].", "fan[2]."]
        assert all(t.claims == 1 for t in got)
        states = _states(world, "r")
        assert sum(s == ("claimed", "owner") for s in states.values()) == 3
        assert sum(s[0] == "queued" for s in states.values()) == 7
        # two more of its own, the oldest, and the ends of two it executed
        ends = [{"prefix": "fan[0].", "state": "done", "result": {"output": 0}},
                {"prefix": "fan[1].", "state": "failed", "result": {"cause": "x"}}]
        stealable = [f"fan[{n}]." for n in range(3, 10)]
        got = queue.pump("r", "owner", 30.0, ends, [], stealable, 2)
        assert [t.prefix for t in got] == ["fan[3].", "fan[4]."]
        states = _states(world, "r")
        assert states["fan[0]."][0] == "done" and states["fan[1]."][0] == "failed"
        assert sum(s == ("claimed", "owner") for s in states.values()) == 3
        assert queue.ends("r", ["fan[0].", "fan[1]."]) == {
            "fan[0].": ("done", {"output": 0}), "fan[1].": ("failed", {"cause": "x"})}
        # another worker's claim: no more than asked; none of the runs it owns
        queue.pump("s", "helper", 30.0, [], _fresh(5, 0), [], 0)
        taken = queue.claim("helper", 30.0, most=2, besides=["s"])
        assert [t.prefix for t in taken] == ["fan[5].", "fan[6]."]
        assert [t.run_id for t in taken] == ["r", "r"]
        assert sum(s == ("claimed", "helper") for s in _states(world, "r").values()) == 2
        taken = queue.claim("helper", 30.0, most=50, besides=["r"])
        assert sorted(t.prefix for t in taken) == [f"fan[{n}]." for n in range(5)]
        assert all(t.run_id == "s" for t in taken)
        assert queue.claim("helper", 30.0, most=50, besides=["r", "s"]) == []
    finally:
        world.close()


def test_a_helpers_ends_ride_with_its_next_claim(postgres_url: str, tmp_path: Path) -> None:
    """end_and_claim writes a helper's ends and claims its next branches in one
    statement: the owner is told of each run whose branch ended (NOTIFY), an end whose
    lease went to another worker is not written (and says so), and a branch of its own
    whose lease ran out is not claimed again in the statement that ends it."""
    import threading
    import time

    world = PostgresWorld(postgres_url, tmp_path)
    try:
        world.register_version("v", {"steps": []})
        world.create_run("r", "v", {}, {}, [NewEvent("RunStarted", {})])
        queue = BranchQueue(world)
        queue.pump("r", "owner", 30.0, [], _fresh(6, 0), [], 0)
        first = queue.claim("helper", 30.0, most=3)
        assert [t.prefix for t in first] == ["fan[0].", "fan[1].", "fan[2]."]
        # fan[1]. lost to another worker; fan[2].'s lease ran out (this worker's still)
        world._one_trip([("UPDATE lwtool.branches SET worker = 'other' WHERE prefix = "
                          "'fan[1].'", ())])
        world._one_trip([("UPDATE lwtool.branches SET lease_until = 0 WHERE prefix = "
                          "'fan[2].'", ())])
        heard: list[str] = []
        listening = threading.Event()

        def listen() -> None:
            listening.set()
            queue.listen_ends(lambda: bool(heard), heard.append, every=0.1)

        thread = threading.Thread(target=listen, daemon=True)
        thread.start()
        listening.wait()
        time.sleep(0.5)  # LISTEN issued
        ends = [(first[0], "done", {"output": 0}), (first[1], "done", {"output": 1})]
        taken, written = queue.end_and_claim(ends, "helper", 30.0, most=5)
        assert written == {("r", "fan[0].")}  # fan[1]. is another's now
        assert sorted(t.prefix for t in taken) == ["fan[3].", "fan[4].", "fan[5]."]
        states = _states(world, "r")
        assert states["fan[0]."] == ("done", "helper")
        assert states["fan[1]."] == ("claimed", "other")
        assert states["fan[2]."] == ("claimed", "helper")  # not claimed again with it
        assert queue.ends("r", ["fan[0]."]) == {"fan[0].": ("done", {"output": 0})}
        thread.join(5)
        assert heard == ["r"]
        # an end alone (no claim): most=0
        assert queue.end_and_claim([(first[2], "failed", {"cause": "x"})], "helper", 30.0,
                                   most=0) == ([], {("r", "fan[2].")})
    finally:
        world.close()
