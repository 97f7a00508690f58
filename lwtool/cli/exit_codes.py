"""Exit codes of every command (DESIGN.md: stable, scripts rely on them)."""

OK = 0
INVALID = 1  # the input is invalid, or the run failed
USAGE = 2  # usage or environment error: missing file, bad flag, unknown run id
WAITING = 3  # the run stopped to wait for a person (`lwtool respond` answers it)
