"""Eager core: Tensor, Variable, dtype policy and the op record with its dispatcher."""
