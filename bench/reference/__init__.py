"""The reference JavaScript library, run by the benchmarks beside our own code."""
