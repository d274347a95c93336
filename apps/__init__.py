"""The apps that run on the runtime, each its own process, and the SDK they use."""
