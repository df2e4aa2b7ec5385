"""mudrika.identity."""
