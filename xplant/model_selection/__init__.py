"""xplant.model_selection."""
