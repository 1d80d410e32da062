"""What a run writes: the results files (results.json, the CSV tables), the columnar store (:mod:`.store`),
report.html and ``RunResults``.

Above the plots, the analysis and the scenario runner: it writes what they made, and never solves.
"""
