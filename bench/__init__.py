"""memsteward benchmarks: `python -m bench [--quick] [names...]` regenerates bench/RESULTS.md."""
