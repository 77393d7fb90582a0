"""How ranks start: one small launcher class per way (local mpirun, hostfile, srun, the lab).

Every launcher turns (program argv, rank layout) into a command line and environment;
nothing here knows about records, the database or reports.
"""
from fabricbench.launch.base import Launcher, LaunchError, Layout, get_launcher, launcher_names
from fabricbench.launch.mpi import MpiInfo, detect_mpi

__all__ = ["Launcher", "LaunchError", "Layout", "get_launcher", "launcher_names", "MpiInfo", "detect_mpi"]
