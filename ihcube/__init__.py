"""ihcube: a cycle-accurate router for incomplete hypercube interconnects.

``ihcube.topology`` holds the rules of the network in plain Python; ``ihcube.rtl`` (the
``rtl/`` folder) the Amaranth components; ``ihcube.sim`` (the ``sim/`` folder) the simulation
harness.
"""
