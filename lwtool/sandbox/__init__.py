"""Process walls the bash tool and code.run share: bubblewrap's arguments and probe
(bwrap.py), dying with lwtool and a pid namespace of its own (confine.py), memory and
pid limits through cgroups (pids.py)."""
