"""mudrika.stores."""
