"""Recorded model and tool calls, shared by the step executors and the agent loop:
litellm calls and slot resolution (models.py, the only importer of litellm), the
scripted and offline models, and the durable call protocol (a call's intent logged
before it is made, its result replayed after a kill: model_calls.py, tool_calls.py)."""
