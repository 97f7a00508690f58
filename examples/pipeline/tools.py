"""The pipeline example's tool: `lwtool orchestrate ... --tools examples/pipeline/tools.py:tools`."""


def double(args: dict) -> dict:
    """Doubles `n`."""
    return {"value": args["n"] * 2}


tools = {"double": double}
