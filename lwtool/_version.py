"""The version of lwtool (the one pyproject.toml declares)."""

__version__ = "0.1.0"
