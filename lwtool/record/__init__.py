"""The durable record of a run, below every part that runs one: the run's state and
recorder (run_state.py), replay of committed events (journal.py), ids and payload
hashes (ids.py), cause codes (errors.py), usage and cost sums (report.py, rollup.py)."""
