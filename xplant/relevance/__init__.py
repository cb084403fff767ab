"""xplant.relevance."""
