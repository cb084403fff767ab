"""xplant.neural.modules."""
