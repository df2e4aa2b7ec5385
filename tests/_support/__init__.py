"""Helpers shared by the test suite (paths to vectors, free ports, node peers)."""
