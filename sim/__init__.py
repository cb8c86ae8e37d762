"""Simulation of the fabric (imported as ``ihcube.sim``): the Amaranth-simulator harness
with link monitors (:mod:`.harness`) and the scoreboard that checks a run (:mod:`.scoreboard`).
"""
