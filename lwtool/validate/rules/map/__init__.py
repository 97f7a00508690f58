"""Rules for map steps."""
