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


def bars_per_vocabulary(times, categories, impls, ylabel, width):
    """One log-scale bar panel per vocabulary: times[(impl, category index, vocab)] in
    microseconds, a bar per impl (offset, name, label) at each category."""
    import matplotlib.pyplot as plt
    vocabs = sorted({v for _, _, v in times})
    fig, axes = plt.subplots(1, len(vocabs), figsize=(6 * len(vocabs), 4), squeeze=False)
    for ax, vocab in zip(axes[0], vocabs):
        xs = range(len(categories))
        for offset, impl, label in impls:
            ys = [times.get((impl, k, vocab), 0) for k in xs]
            ax.bar([x + offset for x in xs], ys, width=width, label=label)
        ax.set_xticks(list(xs))
        ax.set_xticklabels(categories, rotation=30, ha="right")
        ax.set_yscale("log")
        ax.set_ylabel(ylabel)
        ax.set_title(f"vocabulary {vocab}")
        ax.legend(fontsize=8)
    return fig
