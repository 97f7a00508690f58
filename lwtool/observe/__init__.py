"""Reading runs for people and tools: timeline, live progress, OpenTelemetry, web UI."""
