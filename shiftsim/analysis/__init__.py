"""What the numbers of a run and a model say: peaks, worst and closest steps, and the words for them.

Above the scenario runner and the algorithms; below the plots and the output.
"""
