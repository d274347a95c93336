"""The `lineup` command: run the runtime, inspect it, and measure it."""
