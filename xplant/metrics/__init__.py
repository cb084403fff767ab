"""xplant.metrics."""
