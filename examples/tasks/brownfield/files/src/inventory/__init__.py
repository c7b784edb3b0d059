"""Stock levels for a small shop."""
