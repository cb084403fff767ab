"""xplant.datasets."""
