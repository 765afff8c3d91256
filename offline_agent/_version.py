"""The package's version, below every module that records it (trajectories, indexes, run folders), so that none
of them imports the package root and its public API."""

__version__ = "0.1.0"
