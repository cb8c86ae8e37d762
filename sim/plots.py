"""PNG figures of the sweeps (matplotlib, Agg backend: no display needed)."""

import numpy as np

__all__ = ["require_matplotlib", "latency_figure", "latency_plots", "switching_figure",
           "switching_plots", "density_figure", "density_plot", "stale_pictures",
           "reconfiguration_figure", "reconfiguration_plot"]


def require_matplotlib():
    """Return matplotlib, or raise :class:`~ihcube.extras.MissingExtra` naming the extra."""
    from ..extras import require
    return require("matplotlib", "plots", "The sweep figures (or --no-plots)")


def _pyplot():
    matplotlib = require_matplotlib()
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


_METADATA = {"Software": None}  # no version string in the file: same data, same picture


#: Latency ticks to label on a log axis, in cycles; the ones inside the data's range are used.
_LOG_TICKS = (1, 1.5, 2, 3, 4, 5, 6, 7, 8, 10, 12, 15, 20, 30, 40, 50, 70, 100, 150, 200, 300,
              500, 700, 1000, 2000, 5000, 10000)
#: A log scale needs this ratio of highest to lowest latency; below it the axis is linear.
_LOG_RANGE = 3.0


def _latency_axis(ax, latencies):
    """Scale the latency axis so that it always labels several values: logarithmic when the
    latencies span a factor of :data:`_LOG_RANGE` or more, linear otherwise (a log axis over
    6 to 7 cycles labels one tick at most)."""
    from matplotlib import ticker
    low, high = min(latencies), max(latencies)
    if high / low < _LOG_RANGE:
        ax.yaxis.set_major_locator(ticker.MaxNLocator(nbins=6, steps=[1, 2, 2.5, 5, 10]))
        return
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(ticker.FixedLocator(
        [tick for tick in _LOG_TICKS if low / 1.2 <= tick <= high * 1.2]))
    ax.yaxis.set_major_formatter(ticker.ScalarFormatter())
    ax.yaxis.set_minor_formatter(ticker.NullFormatter())


def latency_figure(rows, pattern):
    """The latency-against-throughput figure of one traffic pattern: a panel per depth and
    order, a curve per size (complete cubes solid, incomplete dashed), saturated points left
    out. A panel whose points all saturated says so instead of staying empty."""
    plt = _pyplot()
    mine = [row for row in rows if row["pattern"] == pattern]
    panels = sorted({(row["depth"], row["order"]) for row in mine})
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.2),
                             squeeze=False, sharey=True)
    latencies = [row["mean_latency"] for row in mine if not row["saturated"]]
    for ax, (depth, order) in zip(axes[0], panels):
        drawn = 0
        for k, n in enumerate(sorted({row["n"] for row in mine})):
            curve = sorted((row for row in mine if (row["n"], row["depth"], row["order"])
                            == (n, depth, order) and not row["saturated"]),
                           key=lambda row: row["rate"])
            if not curve:
                continue
            complete = n & (n - 1) == 0
            ax.plot([row["throughput"] for row in curve],
                    [row["mean_latency"] for row in curve],
                    linestyle="-" if complete else "--", marker="o" if complete else "s",
                    markersize=4, color=f"C{k}",
                    label=f"n = {n}" + (" (complete)" if complete else ""))
            drawn += 1
        ax.set_xlabel("throughput (messages accepted per node per cycle)")
        ax.set_title(f"{pattern}, depth {depth}, {order} first")
        ax.grid(True, which="both", alpha=0.3)
        if drawn:
            ax.legend(fontsize=8)
        else:
            lowest = min(row["rate"] for row in mine
                         if (row["depth"], row["order"]) == (depth, order))
            ax.text(0.5, 0.5, f"every point saturated\n(lowest rate {lowest:g}):\n"
                    "nothing to plot", ha="center", va="center", transform=ax.transAxes)
    if latencies:
        _latency_axis(axes[0][0], latencies)
    axes[0][0].set_ylabel("mean latency (cycles, source queueing included)")
    fig.tight_layout()
    return fig


def _pattern_plots(rows, prefix, figure):
    """Write ``figure(pattern)`` for each traffic pattern of ``rows`` to
    ``<prefix>_<pattern>.png``. Returns the file names."""
    plt = _pyplot()
    written = []
    patterns = sorted({row["pattern"] for row in rows}, key=["uniform", "sphere",
                                                            "decreasing"].index)
    for pattern in patterns:
        fig = figure(pattern)
        name = f"{prefix}_{pattern}.png"
        fig.savefig(name, dpi=110, metadata=_METADATA)
        plt.close(fig)
        written.append(name)
    return written


def latency_plots(rows, prefix):
    """Write :func:`latency_figure` for each traffic pattern of ``rows`` to
    ``<prefix>_<pattern>.png``. Returns the file names."""
    return _pattern_plots(rows, prefix, lambda pattern: latency_figure(rows, pattern))


def switching_figure(rows, packet_rows, pattern):
    """Wormhole beside packet switching for one traffic pattern: a column per size; on top,
    mean latency against messages accepted per node per cycle (logarithmic: a 20-flit worm
    against a one-word packet), the wormhole curve and a packet curve per packet depth of
    ``packet_rows`` with the same size, pattern and order; below, the wormhole latency
    against flits accepted per node per cycle. Saturated points are left out."""
    plt = _pyplot()
    mine = [row for row in rows if row["pattern"] == pattern]
    sizes = sorted({row["n"] for row in mine})
    fig, axes = plt.subplots(2, len(sizes), figsize=(4.6 * len(sizes), 7.4), squeeze=False)
    for column, n in enumerate(sizes):
        top, bottom = axes[0][column], axes[1][column]
        worms = sorted((row for row in mine if row["n"] == n and not row["saturated"]),
                       key=lambda row: row["rate"])
        order = mine[0]["order"]
        wh = f"wormhole, {mine[0]['flits']} flits, {mine[0]['vcs']} VCs"
        if worms:
            top.plot([r["throughput"] for r in worms], [r["mean_latency"] for r in worms],
                     "-o", markersize=4, color="C3", label=wh)
            bottom.plot([r["flit_throughput"] for r in worms],
                        [r["mean_latency"] for r in worms], "-o", markersize=4, color="C3",
                        label=wh)
        for k, depth in enumerate(sorted({r["depth"] for r in packet_rows})):
            curve = sorted((r for r in packet_rows if (r["n"], r["pattern"], r["depth"],
                                                       r["order"]) == (n, pattern, depth, order)
                            and not r["saturated"]), key=lambda r: r["rate"])
            if curve:
                top.plot([r["throughput"] for r in curve], [r["mean_latency"] for r in curve],
                         "--s", markersize=3, color=f"C{k}", label=f"packet, depth {depth}")
        top.set_xscale("log")
        top.set_yscale("log")
        top.set_title(f"n = {n}, {pattern}, {order} first", fontsize=9)
        top.set_xlabel("messages accepted per node per cycle")
        bottom.set_xlabel("flits accepted per node per cycle (wormhole)")
        for ax in (top, bottom):
            ax.grid(True, which="both", alpha=0.3)
            if ax.lines:
                ax.legend(fontsize=7)
            else:
                ax.text(0.5, 0.5, "every point saturated", ha="center", va="center",
                        transform=ax.transAxes)
    axes[0][0].set_ylabel("mean latency (cycles; wormhole: to the tail)")
    axes[1][0].set_ylabel("mean latency (cycles, to the tail)")
    fig.tight_layout()
    return fig


def switching_plots(rows, packet_rows, prefix):
    """Write :func:`switching_figure` for each traffic pattern of ``rows`` to
    ``<prefix>_<pattern>.png``. Returns the file names."""
    return _pattern_plots(rows, prefix,
                          lambda pattern: switching_figure(rows, packet_rows, pattern))


def density_figure(n, density, ends, title, unit="messages"):
    """Per-link traffic density of one run as an image: a row per dimension, a column per
    node (both ends of a link show its density). A cell is white where the node has no link
    of that dimension (an incomplete cube's missing links); the figure says so."""
    plt = _pyplot()
    a, i = ends
    D = int(i.max()) + 1 if len(i) else 1
    image = np.full((D, n), np.nan)
    image[i, a] = density
    image[i, a ^ (1 << i)] = density
    fig, ax = plt.subplots(figsize=(10, 3.4))
    shown = ax.imshow(image, aspect="auto", interpolation="nearest", origin="lower",
                      cmap="viridis", vmin=0.0, vmax=max(1.0, float(np.nanmax(image))))
    from matplotlib import ticker
    ax.xaxis.set_major_locator(ticker.MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(ticker.MaxNLocator(integer=True))  # dimensions, nodes: whole
    ax.set_xlabel("node")
    ax.set_ylabel("link dimension")
    ax.set_title(title, fontsize=9)
    fig.colorbar(shown, ax=ax, label=f"{unit} per cycle, both directions")
    fig.text(0.01, 0.01, MISSING_LINK_NOTE, fontsize=8)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return fig


#: The density picture's key to its white cells.
MISSING_LINK_NOTE = "white: the node has no link of this dimension (node XOR 2^dim >= n)"


def density_plot(n, density, ends, title, path, unit="messages"):
    """Write :func:`density_figure` to ``path``; return ``path``."""
    plt = _pyplot()
    fig = density_figure(n, density, ends, title, unit)
    fig.savefig(path, dpi=110, metadata=_METADATA)
    plt.close(fig)
    return path


#: Every picture a sweep named ``<prefix>`` can draw: one per pattern, and the density.
PICTURE_SUFFIXES = ("_uniform.png", "_sphere.png", "_decreasing.png", "_density.png")


def stale_pictures(prefix, written):
    """The pictures of ``prefix`` on disk that are not among ``written``: an earlier run's,
    which would otherwise sit beside the new ones as if they belonged to them."""
    import os
    return [prefix + suffix for suffix in PICTURE_SUFFIXES
            if prefix + suffix not in written and os.path.exists(prefix + suffix)]


#: The fabrics of the reconfiguration experiment, as its figure names them.
_RECONFIGURED = (("xor", "reconfigured incomplete cube (XOR mask)", "C0", "o-"),
                 ("permutations", "... with dimension permutations", "C2", "s--"),
                 ("subcube", "largest fault-free complete subcube", "C1", "^-"))


def reconfiguration_figure(result):
    """The reconfiguration experiment (:func:`ihcube.sim.reconfiguration.experiment`): healthy
    nodes kept against the fault count (mean over the draws, the bars their range), and the
    machine's throughput (the analysis' link bound times the nodes, and the model's at the
    median size where it ran)."""
    plt = _pyplot()
    rows = result["rows"]
    faults = [row["faults"] for row in rows]
    fig, (kept_ax, rate_ax) = plt.subplots(1, 2, figsize=(11, 4.2))
    kept_ax.plot(faults, [row["healthy"] for row in rows], "k:", label="healthy nodes (N - f)")
    for key, label, color, style in _RECONFIGURED:
        kept = [row[key]["kept"] for row in rows]
        mean = np.array([k["mean"] for k in kept])
        spread = [mean - [k["min"] for k in kept], [k["max"] for k in kept] - mean]
        kept_ax.errorbar(faults, mean, yerr=spread, fmt=style, color=color, capsize=3,
                         label=label)
        bound = [row[key]["machine_bound"]["mean"] for row in rows]
        rate_ax.plot(faults, bound, style, color=color, alpha=0.45,
                     label=f"{label}: link bound x n")
        if all("model" in row[key] for row in rows):
            rate_ax.plot(faults, [row[key]["model"]["machine_throughput"] for row in rows],
                         style, color=color, label=f"{label}: model, median n")
    for ax in (kept_ax, rate_ax):
        ax.set_xscale("log", base=2)
        ax.set_xticks(faults, [str(f) for f in faults])
        ax.set_xlabel("faulty nodes f (random)")
        ax.grid(alpha=0.3)
    kept_ax.set_ylabel("nodes kept (mean; bars: min to max)")
    kept_ax.set_title(f"{result['nodes']} nodes, {result['draws']} draws per f", fontsize=9)
    rate_ax.set_yscale("log")
    rate_ax.set_ylabel("messages per cycle, whole machine (uniform)")
    rate_ax.set_title("saturation throughput", fontsize=9)
    kept_ax.legend(fontsize=7)
    rate_ax.legend(fontsize=6)
    fig.tight_layout()
    return fig


def reconfiguration_plot(result, path):
    """Write :func:`reconfiguration_figure` to ``path``; return ``path``."""
    plt = _pyplot()
    fig = reconfiguration_figure(result)
    fig.savefig(path, dpi=110, metadata=_METADATA)
    plt.close(fig)
    return path
