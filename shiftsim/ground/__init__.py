"""Machines standing on the ground: contacts, support, tipping and lift capacity.

* :mod:`.terrain` — the ground surface (level plane or bilinear height grid) and the default stiffness;
* :mod:`.base` — a machine's fixed frame on a free 6-dof base, and its contact points;
* :mod:`.tyres` — quasi-static tyres (Shift ``tire`` force modules) as a solver force field;
* :mod:`.contacts` — the contacts as a solver force field (compression-only normal spring,
  saturating stick friction, analytic stiffness); its stick-friction law serves the tyres too;
* :mod:`.footprint` — ground reaction, centre of pressure, support polygon, tipping margin;
* :mod:`.stand` — a standing machine's start, reference and equilibria;
* :mod:`.validity` — what makes an equilibrium of a standing machine physically impossible;
* :mod:`.selfcheck` — a tipping load checked by a moment balance computed apart from the solver;
* :mod:`.rating` — tipping, hydraulic and rated (ISO 10567) lift capacity.

See docs/ground.md.
"""
