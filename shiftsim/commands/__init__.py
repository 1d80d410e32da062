"""Sub-commands of the ``shiftsim`` command line, one module each (see ``shiftsim.cli``)."""
