"""optimizers."""
