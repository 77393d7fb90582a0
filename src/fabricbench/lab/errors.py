"""The lab's error: one clear line for the user (a launch error, so launchers can raise it too)."""
from fabricbench.launch.base import LaunchError


class LabError(LaunchError):
    """The lab cannot be brought up, found, used or torn down; str() is the whole message."""
