"""PNG figures of the sweeps (matplotlib, Agg backend: no display needed)."""

import numpy as np

__all__ = ["latency_plots", "density_plot"]


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


_METADATA = {"Software": None}  # no version string in the file: same data, same picture


def latency_plots(rows, prefix):
    """Latency against throughput, one PNG per traffic pattern, a panel per depth and order,
    a curve per size (complete cubes solid, incomplete dashed). Returns the file names."""
    plt = _pyplot()
    from matplotlib import ticker
    written = []
    patterns = sorted({row["pattern"] for row in rows}, key=["uniform", "sphere",
                                                            "decreasing"].index)
    for pattern in patterns:
        mine = [row for row in rows if row["pattern"] == pattern]
        panels = sorted({(row["depth"], row["order"]) for row in mine})
        fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.2),
                                 squeeze=False, sharey=True)
        for ax, (depth, order) in zip(axes[0], panels):
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
            ax.set_yscale("log")
            ax.yaxis.set_major_locator(ticker.FixedLocator(
                [2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 50, 100, 200, 500, 1000]))
            ax.yaxis.set_major_formatter(ticker.ScalarFormatter())
            ax.yaxis.set_minor_formatter(ticker.NullFormatter())
            ax.set_xlabel("throughput (messages accepted per node per cycle)")
            ax.set_title(f"{pattern}, depth {depth}, {order} first")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
        axes[0][0].set_ylabel("mean latency (cycles, source queueing included)")
        fig.tight_layout()
        name = f"{prefix}_{pattern}.png"
        fig.savefig(name, dpi=110, metadata=_METADATA)
        plt.close(fig)
        written.append(name)
    return written


def density_plot(n, density, ends, title, path):
    """Per-link traffic density of one run as an image: a row per dimension, a column per
    node (both ends of a link show its density; white where a node has no such link)."""
    plt = _pyplot()
    a, i = ends
    D = int(i.max()) + 1 if len(i) else 1
    image = np.full((D, n), np.nan)
    image[i, a] = density
    image[i, a ^ (1 << i)] = density
    fig, ax = plt.subplots(figsize=(10, 3.2))
    shown = ax.imshow(image, aspect="auto", interpolation="nearest", origin="lower",
                      cmap="viridis", vmin=0.0, vmax=max(1.0, float(np.nanmax(image))))
    ax.set_xlabel("node")
    ax.set_ylabel("link dimension")
    ax.set_title(title, fontsize=9)
    fig.colorbar(shown, ax=ax, label="messages per cycle, both directions")
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata=_METADATA)
    plt.close(fig)
    return path
