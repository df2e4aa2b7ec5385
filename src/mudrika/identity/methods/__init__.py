"""mudrika.identity.methods."""
