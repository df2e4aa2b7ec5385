"""mudrika.trust."""
