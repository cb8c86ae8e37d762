"""FPGA builds of the fabric (imported as ``ihcube.boards``).

- :mod:`.traffic`: :class:`TrafficGenerator`, one node's on-chip traffic source.
- :mod:`.checker`: :class:`Checker`, one node's on-chip delivery checker.
- :mod:`.selftest`: :class:`SelfTest`, the fabric with a generator and a checker per node and
  the global conservation check.
- :mod:`.uart`: :class:`UARTTransmitter` and :class:`ReportLine`, the periodic report.
- :mod:`.pll`: :func:`pll_settings` and :class:`Pll`, the board's PLL for a faster clock.
- :mod:`.top`: :class:`BoardTop`, the self-test on a board's LEDs and UART (on the PLL's
  clock if asked).
- :mod:`.shell`: :class:`SynthShell`, the bare fabric behind a few pins, for utilisation
  and Fmax.
- :mod:`.build`: the ``synth``, ``bitstream`` and ``table`` builds (``ihcube synth``, ``ihcube
  bitstream``, ``ihcube synth-table``).

Nothing outside this folder imports a board (``amaranth-boards``).
"""
