"""layers."""
