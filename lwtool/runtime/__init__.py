"""The scheduler: start and resume a run (interpreter.py), schedule one step list
(scope.py), the durable protocol of one step attempt (dispatch.py), parallel groups,
capability drift at resume, and the public lock/run/replay API (api.py). On top of
the roles (lwtool.harness) and everything below them."""
