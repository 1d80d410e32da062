"""The interactive 3D view of a run (``shiftsim view``): its results drawn in the browser with viser.

:mod:`.drawing` turns the results into what is drawn at a step (plain arrays, no viser); :mod:`.scenes` says where
the machines' poses come from (results.json's ``scene``, or forward kinematics of the store's coordinates for a long
run); :mod:`.server` shows it in a viser server with a step slider and a step number box. viser is the optional
extra ``view`` (``pip install shiftsim[view]``); only :mod:`.server` imports it.
"""
