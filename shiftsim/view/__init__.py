"""The interactive 3D view of a run (``shiftsim view``): results.json drawn in the browser with viser.

:mod:`.drawing` turns the results document into what is drawn at a step (plain arrays, no viser);
:mod:`.server` shows it in a viser server with a step slider. viser is the optional extra ``view``
(``pip install shiftsim[view]``); only :mod:`.server` imports it.
"""
