"""Deprecated: the number formatter moved to ``fabricbench.numbers`` (the ground floor).

Kept only so that code written before the move still imports; new code imports
``fabricbench.numbers``. Nothing in the tree imports this module (tests/test_layers.py).
"""
from fabricbench.numbers import *  # noqa: F401,F403
from fabricbench.numbers import MISSING, FACTOR_FROM, EXACT_DIGITS, _finite, _sig  # noqa: F401
