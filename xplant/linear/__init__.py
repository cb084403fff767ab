"""xplant.linear."""
