"""Simulation (imported as ``ihcube.sim``): the cycle-exact fast model of the fabric
(:mod:`.model`, its Numba kernel :mod:`.model_kernel`), the cycle-exact model of the
wormhole fabric (:mod:`.wormhole_model`, plain Python, the reference) and its compiled version
(:mod:`.wormhole_fast`, its Numba kernel :mod:`.wormhole_kernel`), traffic patterns
(:mod:`.traffic`), the
latency-throughput sweeps (:mod:`.sweep`) and where they run (:mod:`.cluster`, Dask),
collectives (:mod:`.collectives`) and their schedules for all-port nodes (:mod:`.schedule`),
the exact analysis of link loads without simulation (:mod:`.analysis`), and plots
(:mod:`.plots`).

Add a traffic pattern in :mod:`.traffic`.
"""
