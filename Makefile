# ihcube: the two commands a fresh machine needs are `make verilog N=26` and `make test`.
# The virtual environment is made on first use from pyproject.toml.

PYTHON ?= python3
VENV   ?= .venv
N      ?= 26
W      ?= 32
DEPTH  ?= 1
PORTS  ?= 1
ORDER  ?= msb
# Wormhole switching (docs/wormhole.md): the flit-level options are passed only when set, so
# their defaults live in one place (ihcube.params.WORMHOLE_DEFAULTS).
SWITCHING ?= packet
FLITS      ?=
FLIT_WIDTH ?=
VCS        ?=
VC_DEPTH   ?=
# Register stages of a packet router, each 0 or 1 (docs/fpga.md): a relay on each link
# ("Link stages"), the grant registered ("Pipelined switch"), a relay on each eject port; all
# three place the 26-node fabric at 150 MHz ("Every output staged"). Passed only when set, so
# that their defaults live in one place (ihcube.params).
LINK_STAGES   ?=
SWITCH_STAGES ?=
EJECT_STAGES  ?=
STAGES = $(if $(LINK_STAGES),--link-stages='$(LINK_STAGES)') \
	$(if $(SWITCH_STAGES),--switch-stages='$(SWITCH_STAGES)') \
	$(if $(EJECT_STAGES),--eject-stages='$(EJECT_STAGES)')
# Threads each task's packet model runs on (--threads of sweep, saturation, collectives and
# stress; docs/scale.md): passed only when set, so that its default lives in one place (the
# commands' option). The wormhole model has one thread: its targets refuse THREADS above 1,
# and make sweep runs its wormhole slice without it.
THREADS ?=
# The sizes of make saturation-wormhole (SIZES=... for others).
WORMHOLE_SIZES = 1024,1048,1114,1818,2048
JOBS   ?= 2
COLLECTIVE_PORTS ?= 1,full
FAMILY ?= ecp5
BOARD  ?= ulx3s-85f
SYNTH_OPTS ?=
PLACER ?=
CYCLES ?= 20000
SEED   ?= 1
BACKEND ?= model

BIN    := $(VENV)/bin
# Two installs: what `make verilog` needs (pip install -e .), and everything (the dev extra).
BASE   := $(VENV)/.installed-base
STAMP  := $(VENV)/.installed

.PHONY: help verilog test check test-long system-tools bench cocotb lint deadlock formal sweep sweep-full sweep-wormhole saturation saturation-wormhole collectives analysis clean synth bitstream synth-table stress stress-campaign stress-campaign-wormhole bench-model bench-wormhole

help:
	@echo "make verilog N=26 [W=32 DEPTH=1 ORDER=msb PORTS=1]  write gen/ihcube_n<N>_w<W>.v (_p<P> if PORTS>1)"
	@echo "make verilog N=26 LINK_STAGES=1             a relay on each link (_s1): docs/fpga.md"
	@echo "  SWITCH_STAGES=1 EJECT_STAGES=1            ... and every output staged (_s1_g1_e1, 150 MHz at 26 nodes);"
	@echo "                                            the three take verilog, cocotb, lint, stress, stress-campaign, saturation, synth, bitstream"
	@echo "make verilog N=26 SWITCHING=wormhole [VCS=3 FLITS=20 FLIT_WIDTH=32 VC_DEPTH=2]  wormhole fabric: docs/wormhole.md"
	@echo "make test                                   run the test suite, every test"
	@echo "make check                                  its fast tier (not the tests marked slow), under 3 minutes"
	@echo "make test-long                              the long tier make test leaves out (wormhole lockstep's long runs)"
	@echo "make bench                                  measure generation time, memory, size, cells"
	@echo "make bench-model                            router-cycles per second of the fast model"
	@echo "make bench-wormhole                         the same for the fast wormhole model"
	@echo "make cocotb N=26 [WAVES=1]                  cocotb regression of the emitted Verilog on Icarus"
	@echo "make lint N=26                              verilator --lint-only -Wall on the emitted Verilog"
	@echo "make deadlock                               channel dependency graphs acyclic, n <= 4096, both orders"
	@echo "make stress N=26 CYCLES=20000 [DEPTH ORDER SEED BACKEND=model|rtl]  saturating traffic, scoreboard, watchdog"
	@echo "make stress N=13 SWITCHING=wormhole [FLITS VCS VC_DEPTH FLIT_WIDTH]  the same in wormhole mode"
	@echo "make stress-campaign                        every n 1..64 and 100..2047, both depths and orders: results/stress_campaign.json"
	@echo "make stress-campaign LINK_STAGES=1          its packet runs with a relay on each link: results/stress_campaign_s1.json"
	@echo "  SWITCH_STAGES=1 EJECT_STAGES=1            ... with every output staged: results/stress_campaign_s1_g1_e1.json"
	@echo "make stress-campaign-wormhole               its wormhole part only: results/stress_campaign_wormhole.json"
	@echo "  THREADS=2                                 ... (stress, sweeps, saturation, collectives) each packet model on 2 threads, same results: docs/scale.md"
	@echo "make synth N=26 FAMILY=ecp5|ice40 [PORTS=1 SYNTH_OPTS=.. PLACER=heap|static|sa LINK_STAGES=1 SWITCHING=wormhole VCS=..]  place and route the fabric; LUTs, FFs, RAM, Fmax"
	@echo "make synth N=26 PLACER=static LINK_STAGES=1 SWITCH_STAGES=1 EJECT_STAGES=1  the fabric of 150 MHz (about 5 minutes)"
	@echo "make bitstream BOARD=ulx3s-85f N=26         self-test bitstream (BOARD=icebreaker N=8)"
	@echo "  CLOCK_MHZ=40                              ... on the board's PLL at 40 MHz"
	@echo "  W=24                                      ... with a 24-bit payload (8 check bits)"
	@echo "make synth-table [FAMILY=ecp5]              routers of node 0 (packet, wormhole), fabrics n = 4..64 at depth 1, 2; resumes; docs/fpga.md's table"
	@echo "  PNR_MINUTES=60                            ... each place and route stopped after 60 min (make synth too)"
	@echo "make sweep                                  quick latency-throughput sweep and a wormhole slice (about a minute): results/sweep_quick*, results/sweep_wormhole-quick*"
	@echo "make sweep-wormhole                         wormhole sweep, 5 sizes x 3 patterns, 20 flits, 3 VCs: results/sweep_wormhole*"
	@echo "make sweep-full                             full sweep, 5 sizes x 2 depths x 3 patterns: results/sweep_full*"
	@echo "make saturation-wormhole [VCS=1 SIZES=1024]  the same for wormhole (20 flits, 3 VCs), 5 sizes: results/saturation_wormhole*.json"
	@echo "make saturation                             zero-load latency per hop, saturation throughput: results/saturation.json"
	@echo "make saturation LINK_STAGES=1               the same with a relay on each link: results/saturation_link_stages.json"
	@echo "  SWITCH_STAGES=1 EJECT_STAGES=1            ... with every output staged: results/saturation_s1_g1_e1.json"
	@echo "make collectives [COLLECTIVE_PORTS=1,full]  broadcast, scatter, multinode (hardware, relays, segments), exchange vs bounds: results/collectives.*"
	@echo "make analysis                               exact link loads, no simulation: results/analysis.json, analysis_scan.json"
	@echo "make formal                                 SymbiYosys: router proofs; fabrics n = 3..6 proved safe (PDR), delivery BMC"

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null || \
		{ echo "error: ihcube needs Python 3.11 or newer; '$(PYTHON)' is $$($(PYTHON) --version 2>&1). Set PYTHON=python3.11 (or newer)." >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(BASE): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	@touch $@

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $@ $(BASE)

verilog: $(BASE)
	@$(BIN)/ihcube verilog --nodes='$(N)' --width='$(W)' --depth='$(DEPTH)' --order='$(ORDER)' \
		--ports='$(PORTS)' --switching='$(SWITCHING)' $(if $(FLITS),--flits='$(FLITS)') \
		$(if $(FLIT_WIDTH),--flit-width='$(FLIT_WIDTH)') $(if $(VCS),--vcs='$(VCS)') \
		$(if $(VC_DEPTH),--vc-depth='$(VC_DEPTH)') $(STAGES) --out=gen

system-tools:
	@sh .ci/system-tools.sh

# The test tiers (markers in pyproject.toml): `make check` leaves out the tests marked slow
# (the edit loop, under 3 minutes on 2 cores); `make test` runs every test (the README's and
# CI's command). loadgroup hands the workers a test or two at a time, slow ones first
# (tests/conftest.py), so that the run does not end on one worker's long test.
TEST_DIST = --dist loadgroup
test: $(STAMP) system-tools
	$(BIN)/python -m pytest -n $(JOBS) $(TEST_DIST) tests

check: $(STAMP) system-tools
	$(BIN)/python -m pytest -n $(JOBS) $(TEST_DIST) -m 'not slow' tests

# The long tier, which `make test` leaves out: the wormhole lockstep's fifteen long runs.
test-long: $(STAMP) system-tools
	$(BIN)/python -m pytest -n $(JOBS) $(TEST_DIST) -m long tests

bench: $(STAMP)
	$(BIN)/ihcube bench --out results/bench_verilog.json

bench-model: $(STAMP)
	$(BIN)/ihcube bench-model --out results/bench_model.json

bench-wormhole: $(STAMP)
	$(BIN)/ihcube bench-wormhole --out results/bench_wormhole_model.json

cocotb: $(STAMP) system-tools
	@$(BIN)/ihcube cocotb --nodes='$(N)' --width='$(W)' --depth='$(DEPTH)' \
		--order='$(ORDER)' $(if $(WAVES),--waves) $(STAGES)

lint: $(STAMP) system-tools
	@$(BIN)/ihcube lint --nodes='$(N)' --width='$(W)' --depth='$(DEPTH)' --order='$(ORDER)' \
		$(STAGES)

deadlock: $(STAMP)
	$(BIN)/ihcube deadlock --max-nodes 4096

stress: $(STAMP)
	@$(BIN)/ihcube stress --nodes='$(N)' --cycles='$(CYCLES)' \
		$(if $(filter wormhole,$(SWITCHING)),,--depth='$(DEPTH)') \
		--order='$(ORDER)' --seed='$(SEED)' --backend='$(BACKEND)' \
		--switching='$(SWITCHING)' $(if $(FLITS),--flits='$(FLITS)') \
		$(if $(FLIT_WIDTH),--flit-width='$(FLIT_WIDTH)') $(if $(VCS),--vcs='$(VCS)') \
		$(if $(VC_DEPTH),--vc-depth='$(VC_DEPTH)') $(if $(THREADS),--threads='$(THREADS)') \
		$(STAGES)

# The file is named by the stages: results/stress_campaign.json, _s1.json, _s1_g1_e1.json, ...
stress-campaign: $(STAMP)
	$(BIN)/ihcube stress --campaign --jobs $(JOBS) $(if $(THREADS),--threads='$(THREADS)') \
		$(STAGES) --out results/

stress-campaign-wormhole: $(STAMP)
	$(BIN)/ihcube stress --campaign --switching wormhole --jobs $(JOBS) \
		$(if $(THREADS),--threads='$(THREADS)') \
		--out results/stress_campaign_wormhole.json

formal: $(STAMP) system-tools
	$(BIN)/ihcube formal --jobs $(JOBS)

sweep: $(STAMP)
	@$(BIN)/ihcube sweep --set quick --jobs $(JOBS) $(if $(THREADS),--threads='$(THREADS)') \
		--out results
	@$(BIN)/ihcube sweep --set wormhole-quick --jobs $(JOBS) --out results --beside results/sweep_quick.csv

sweep-wormhole: $(STAMP)
	@$(BIN)/ihcube sweep --set wormhole --jobs $(JOBS) $(if $(THREADS),--threads='$(THREADS)') \
		--out results --beside results/sweep_full.csv

sweep-full: $(STAMP)
	@$(BIN)/ihcube sweep --set full --jobs $(JOBS) $(if $(THREADS),--threads='$(THREADS)') \
		--out results

saturation: $(STAMP)
	@$(BIN)/ihcube saturation $(STAGES) --jobs $(JOBS) \
		$(if $(THREADS),--threads='$(THREADS)') --out results

saturation-wormhole: $(STAMP)
	@$(BIN)/ihcube saturation --switching wormhole --sizes '$(if $(SIZES),$(SIZES),$(WORMHOLE_SIZES))' \
		$(if $(FLITS),--flits='$(FLITS)') $(if $(VCS),--vcs='$(VCS)') \
		$(if $(VC_DEPTH),--vc-depth='$(VC_DEPTH)') --jobs $(JOBS) \
		$(if $(THREADS),--threads='$(THREADS)') --out results

collectives: $(STAMP)
	@$(BIN)/ihcube collectives --ports $(COLLECTIVE_PORTS) --jobs $(JOBS) \
		$(if $(THREADS),--threads='$(THREADS)') --out results

analysis: $(STAMP)
	@$(BIN)/ihcube analyze --nodes 1024,1048,1114,1818,2048 --pattern uniform,sphere,decreasing \
		--order msb,lsb --reading literal,exclusive --saturation results/saturation.json \
		--json results/analysis.json
	@$(BIN)/ihcube analyze --scan 4096 --order msb,lsb --json results/analysis_scan.json

synth: $(STAMP)
	@$(BIN)/ihcube synth --nodes='$(N)' --family='$(FAMILY)' \
		--width='$(W)' --depth='$(DEPTH)' --ports='$(PORTS)' \
		--switching='$(SWITCHING)' $(if $(FLITS),--flits='$(FLITS)') \
		$(if $(FLIT_WIDTH),--flit-width='$(FLIT_WIDTH)') $(if $(VCS),--vcs='$(VCS)') \
		$(if $(VC_DEPTH),--vc-depth='$(VC_DEPTH)') $(STAGES) \
		$(if $(SYNTH_OPTS),--synth-opts='$(SYNTH_OPTS)') \
		$(if $(PNR_MINUTES),--pnr-minutes='$(PNR_MINUTES)') \
		$(if $(PLACER),--placer='$(PLACER)') --out results

bitstream: $(STAMP)
	@$(BIN)/ihcube bitstream --board='$(BOARD)' --nodes='$(N)' --width='$(W)' \
		--depth='$(DEPTH)' $(if $(CLOCK_MHZ),--clock-mhz='$(CLOCK_MHZ)') $(if $(SYNTH_OPTS),--synth-opts='$(SYNTH_OPTS)') \
		$(if $(PLACER),--placer='$(PLACER)') $(STAGES) --out results

synth-table: $(STAMP)
	@$(BIN)/ihcube synth-table --family='$(FAMILY)' $(if $(SYNTH_OPTS),--synth-opts='$(SYNTH_OPTS)') \
		$(if $(PNR_MINUTES),--pnr-minutes='$(PNR_MINUTES)') \
		$(if $(PLACER),--placer='$(PLACER)') --out results

clean:
	rm -rf gen/*.v .pytest_cache
