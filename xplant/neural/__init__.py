"""xplant.neural."""
