"""shiftsim: a quasi-static multibody simulator.

Read a machine description, compile it into a tree-plus-loops model, solve
static equilibrium, report deflections and joint loads, check collisions.
"""

__version__ = "0.1.0"
