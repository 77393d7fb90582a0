"""fabricbench: measure, profile, model and compare HPC interconnects."""
__version__ = "0.1.0"
