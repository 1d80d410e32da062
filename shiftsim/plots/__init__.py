"""The plots of a run: matplotlib figures drawn from the solved steps, encoded as PNG.

Above the analysis and the scenario runner; below the output that writes the files.
"""
