"""Simulation (imported as ``ihcube.sim``): the cycle-exact fast model of the fabric
(:mod:`.model`, its Numba kernel :mod:`.model_kernel`), traffic patterns (:mod:`.traffic`), the
latency-throughput sweeps (:mod:`.sweep`), collectives (:mod:`.collectives`) and plots
(:mod:`.plots`).

Add a traffic pattern in :mod:`.traffic`.
"""
