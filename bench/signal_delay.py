"""What the loop's own wait for a sync tool (lwtool.tools.Tool.invoke, `alone`) costs a
signal: SIGTERM to process exit of `lwtool run` on a chain of sync tools, sent while a
tool blocks (the loop waits for its thread past the first 10 ms slice), and sent as
soon as the tool starts (inside the slice, the worst case: the signal waits for the
slice to end).

Run: .venv/bin/python bench/signal_delay.py [--reps N]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TOOLS = ROOT / "tests" / "runtime"


def delay(late: bool) -> float:
    """Milliseconds from SIGTERM to the process's exit; `late`: the tool has blocked
    for 200 ms already, else it has just started."""
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "in.json").write_text('{"seed": "s"}')
        env = {**os.environ, "LWTOOL_TEST_DIR": tmp, "LWTOOL_TEST_BLOCK": "c"}
        proc = subprocess.Popen(
            [sys.executable, "-m", "lwtool", "run", str(TOOLS / "workflows" / "chain.lwir.yaml"),
             "--input", f"{tmp}/in.json", "--tools", f"{TOOLS / 'side_effects.py'}:tools",
             "--data-dir", f"{tmp}/data"], cwd=ROOT, env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        marker = Path(tmp) / "blocked-c"
        while not marker.exists():
            time.sleep(0.0002)
        if late:
            time.sleep(0.2)
        sent = time.perf_counter()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        return (time.perf_counter() - sent) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=7)
    options = parser.parse_args()
    for late, label in ((True, "while the tool blocks"), (False, "as the tool starts")):
        samples = [delay(late) for _ in range(options.reps)]
        print(f"SIGTERM to exit, {label}: median {statistics.median(samples):.1f} ms "
              f"(max {max(samples):.1f} ms, {options.reps} runs)")


if __name__ == "__main__":
    main()
