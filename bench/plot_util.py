"""The shared frame of the benchmarks' plot scripts: `plot.py RESULT.json OUT.png`,
matplotlib without a display, the figure written at a fixed resolution."""
import json
import sys

import matplotlib

matplotlib.use("Agg")


def run(draw, usage):
    """Calls draw(result) with the parsed RESULT.json; saves the figure it returns."""
    if len(sys.argv) != 3:
        sys.exit(usage)
    with open(sys.argv[1]) as f:
        fig = draw(json.load(f))
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)
