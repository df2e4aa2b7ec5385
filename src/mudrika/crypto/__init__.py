"""mudrika.crypto."""
