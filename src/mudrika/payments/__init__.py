"""mudrika.payments."""
