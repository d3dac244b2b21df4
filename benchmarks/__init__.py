"""Scripts that print figures (speed is measured here, never asserted in tests): run each from the checkout as
`python -m benchmarks.<name>`."""
