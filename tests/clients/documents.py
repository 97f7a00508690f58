"""What the editor tests open: a workflow whose step type is misspelt, and the finding
lwtool gives for it (line 7, column 11)."""

BROKEN = """\
apiVersion: littleworkflow.dev/v0.1
kind: Workflow
metadata: {name: x}
permissions: {tools: [t]}
steps:
  - id: a
    uses: tool.cal
    with: {tool: t}
"""
FINDING = "unknown step type 'tool.cal'; did you mean 'tool.call'?"
