"""Arbor's benchmarks (SPEC §14): `python -m benchmarks`, or `make bench`."""
