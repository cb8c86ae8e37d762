"""The sweep figures say what they show: a latency axis with several labels whatever the
range, a panel whose points all saturated says so, the density picture explains its white
cells."""

import pytest

from ihcube.sim import plots


def rows_of(latencies, saturated=False, n=64, depth=1, order="msb", pattern="uniform"):
    return [dict(n=n, depth=depth, order=order, pattern=pattern, rate=0.1 * (k + 1),
                 throughput=0.1 * (k + 1), mean_latency=latency, saturated=saturated)
            for k, latency in enumerate(latencies)]


def labelled_ticks(ax):
    """The y values labelled inside the axis's view."""
    ax.figure.canvas.draw()
    low, high = ax.get_ylim()
    return [tick for tick, label in zip(ax.get_yticks(), ax.get_yticklabels())
            if low <= tick <= high and label.get_text()]


@pytest.mark.parametrize("latencies", [(6.1, 6.4, 6.9), (3.0, 3.2), (5.0, 40.0, 400.0),
                                       (2.0, 9.0)])
def test_latency_axis_labels_several_values(latencies):
    fig = plots.latency_figure(rows_of(latencies), "uniform")
    ax = fig.axes[0]
    ticks = labelled_ticks(ax)
    assert len(ticks) >= 3, (latencies, ax.get_yscale(), ticks)
    assert ax.get_yscale() == ("log" if max(latencies) / min(latencies) >= 3 else "linear")


def test_a_panel_whose_points_all_saturated_says_so():
    rows = rows_of((5.0, 6.0), depth=1) + rows_of((7.0, 8.0), saturated=True, depth=2)
    fig = plots.latency_figure(rows, "uniform")
    first, second = fig.axes[:2]
    assert not [t for t in first.texts if "saturated" in t.get_text()]
    notes = [t.get_text() for t in second.texts]
    assert notes == ["every point saturated\n(lowest rate 0.1):\nnothing to plot"]
    assert not second.lines


def test_density_picture_explains_its_white_cells():
    import numpy as np
    fig = plots.density_figure(3, np.array([0.5, 0.25]), (np.array([0, 0]), np.array([0, 1])),
                               "n = 3")
    texts = [t.get_text() for t in fig.texts]
    assert plots.MISSING_LINK_NOTE in texts
    assert "no link" in plots.MISSING_LINK_NOTE
    fig.canvas.draw()
    ax = fig.axes[0]
    assert all(float(tick).is_integer() for tick in ax.get_yticks())  # dimensions are whole
