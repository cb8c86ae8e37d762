# ihcube: the two commands a fresh machine needs are `make verilog N=26` and `make test`.
# The virtual environment is made on first use from pyproject.toml.

PYTHON ?= python3
VENV   ?= .venv
N      ?= 26
# The fabric (ihcube.spec.FabricSpec; docs/commands.md): every option of `ihcube verilog`, in
# one variable, FABRIC_OPTIONS, that each target building a fabric passes. Each short form is
# passed only when set, so that the defaults live in one place (ihcube.spec); FABRIC adds any
# option as it is, e.g. FABRIC='--switching wormhole --vcs 1'.
#   W DEPTH ORDER PORTS                  --width --depth --order --ports
#   SWITCHING FLITS FLIT_WIDTH VCS VC_DEPTH  --switching and the wormhole options
#   INTERFACE                            --interface: native (default) or axis (AXI4-Stream)
#   LINK_STAGES SWITCH_STAGES EJECT_STAGES   a packet router's register stages, each 0 or 1:
#     a relay on each link, the grant registered, a relay on each eject port; all three place
#     the 26-node fabric at 150 MHz (docs/fpga.md)
#   RECONFIGURABLE=1                     --reconfigurable: the active size and logical
#     addresses loaded at run time (docs/reconfiguration-hardware.md)
FABRIC ?=
option = $(if $($(1)),--$(2)='$($(1))')
SPEC_OPTIONS = $(call option,W,width) $(call option,DEPTH,depth) $(call option,ORDER,order) \
	$(call option,PORTS,ports) $(call option,SWITCHING,switching) \
	$(call option,FLITS,flits) $(call option,FLIT_WIDTH,flit-width) $(call option,VCS,vcs) \
	$(call option,VC_DEPTH,vc-depth) $(call option,LINK_STAGES,link-stages) \
	$(call option,SWITCH_STAGES,switch-stages) $(call option,EJECT_STAGES,eject-stages) \
	$(call option,INTERFACE,interface) $(if $(filter 1,$(RECONFIGURABLE)),--reconfigurable) \
	$(FABRIC)
FABRIC_OPTIONS = $(strip --nodes='$(N)' $(SPEC_OPTIONS))
# The register stages alone (a part of EXPERIMENT_OPTIONS).
STAGES = $(strip $(call option,LINK_STAGES,link-stages) \
	$(call option,SWITCH_STAGES,switch-stages) $(call option,EJECT_STAGES,eject-stages))
# The experiments take lists of sizes (SIZES), not N, and the fabric's other options but the
# payload width, depth and ports, which they refuse (the sweeps' sets and --depths say them).
EXPERIMENT_OPTIONS = $(strip $(call option,SWITCHING,switching) $(call option,FLITS,flits) \
	$(call option,FLIT_WIDTH,flit-width) $(call option,VCS,vcs) \
	$(call option,VC_DEPTH,vc-depth) $(STAGES) $(FABRIC))
THREADS_OPTION = $(call option,THREADS,threads)
# Threads each task's packet model runs on (--threads of sweep, saturation, collectives and
# stress; docs/scale.md): passed only when set, so that its default lives in one place (the
# commands' option). The wormhole model has one thread: its targets refuse THREADS above 1,
# and make sweep runs its wormhole slice without it.
THREADS ?=
# The sizes of make saturation: the command's own (1024,1048) for packet switching; Tzeng and
# Kumar's five for wormhole switching, as results/saturation_wormhole*.json have them.
WORMHOLE_SIZES := 1024,1048,1114,1818,2048
SIZES ?= $(if $(filter wormhole,$(SWITCHING)),$(WORMHOLE_SIZES))
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

.PHONY: reconfigure reconfiguration
.PHONY: help verilog test check test-long system-tools bench cocotb lint deadlock formal sweep sweep-full sweep-wormhole saturation saturation-wormhole collectives analysis clean synth bitstream synth-table stress stress-campaign stress-campaign-wormhole bench-model bench-wormhole results design-digests throughput

help:
	@echo "make verilog N=26 [W=32 DEPTH=1 ORDER=msb PORTS=1]  write gen/ihcube_n<N>_w<W>.v (_p<P> if PORTS>1)"
	@echo "make verilog N=26 LINK_STAGES=1             a relay on each link (_s1): docs/fpga.md"
	@echo "  SWITCH_STAGES=1 EJECT_STAGES=1            ... and every output staged (_s1_g1_e1, 150 MHz at 26 nodes);"
	@echo "  FABRIC='--vcs 1 ...'                      any option of ihcube verilog; every target that builds a fabric takes them all"
	@echo "make verilog N=26 SWITCHING=wormhole [VCS=3 FLITS=20 FLIT_WIDTH=32 VC_DEPTH=2]  wormhole fabric: docs/wormhole.md"
	@echo "make verilog N=26 INTERFACE=axis            AXI4-Stream PE ports (_axis): docs/axis.md"
	@echo "make verilog N=26 FUSESOC=1                 ... and a FuseSoC core beside it: docs/fusesoc.md"
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
	@echo "make stress N=32 RECONFIGURABLE=1 FAULTS=4  routers fail at random cycles; reset, reconfigure, resume"
	@echo "make stress N=13 SWITCHING=wormhole [FLITS VCS VC_DEPTH FLIT_WIDTH]  the same in wormhole mode"
	@echo "make stress-campaign                        every n 1..64 and 100..2047, both depths and orders: results/stress_campaign.json"
	@echo "make stress-campaign LINK_STAGES=1          its packet runs with a relay on each link: results/stress_campaign_s1.json"
	@echo "  SWITCH_STAGES=1 EJECT_STAGES=1            ... with every output staged: results/stress_campaign_s1_g1_e1.json"
	@echo "make stress-campaign SWITCHING=wormhole     its wormhole part only: results/stress_campaign_wormhole.json"
	@echo "  THREADS=2                                 ... (stress, sweeps, saturation, collectives) each packet model on 2 threads, same results: docs/scale.md"
	@echo "make synth N=26 FAMILY=ecp5|ice40 [any fabric option, SYNTH_OPTS=.. PLACER=heap|static|sa]  place and route the fabric; LUTs, FFs, RAM, Fmax"
	@echo "make synth N=26 PLACER=static LINK_STAGES=1 SWITCH_STAGES=1 EJECT_STAGES=1  the fabric of 150 MHz (about 5 minutes)"
	@echo "make bitstream BOARD=ulx3s-85f N=26         self-test bitstream (BOARD=icebreaker N=8)"
	@echo "  CLOCK_MHZ=40                              ... on the board's PLL at 40 MHz"
	@echo "  W=24                                      ... with a 24-bit payload (8 check bits)"
	@echo "make synth N=26 RECONFIGURABLE=1 NO_PLACE=1   Yosys only: LUTs and FFs, no place and route, no Fmax"
	@echo "make synth-table [FAMILY=ecp5]              routers of node 0 (packet, wormhole), fabrics n = 4..64 at depth 1, 2, reconfigurable rows; resumes; docs/fpga.md's table"
	@echo "  PNR_MINUTES=60                            ... each place and route stopped after 60 min (make synth too)"
	@echo "make throughput                             router 0's Fmax x the model's saturation at 1024: flits, bits per node per µs: results/throughput_per_us.*"
	@echo "make sweep                                  quick latency-throughput sweep and a wormhole slice (about a minute): results/sweep_quick*, results/sweep_wormhole-quick*"
	@echo "make sweep-full SWITCHING=wormhole          wormhole sweep, 5 sizes x 3 patterns, 20 flits, 3 VCs: results/sweep_wormhole*"
	@echo "make sweep-full                             full sweep, 5 sizes x 2 depths x 3 patterns: results/sweep_full*"
	@echo "make saturation SWITCHING=wormhole [VCS=1 SIZES=1024]  the same for wormhole (20 flits, 3 VCs), 5 sizes: results/saturation_wormhole*.json"
	@echo "make saturation                             zero-load latency per hop, saturation throughput: results/saturation.json"
	@echo "make saturation LINK_STAGES=1               the same with a relay on each link: results/saturation_s1.json"
	@echo "  SWITCH_STAGES=1 EJECT_STAGES=1            ... with every output staged: results/saturation_s1_g1_e1.json"
	@echo "make collectives [COLLECTIVE_PORTS=1,full]  broadcast, scatter, multinode (hardware, relays, segments), exchange vs bounds: results/collectives.*"
	@echo "make analysis                               exact link loads, no simulation: results/analysis.json, analysis_scan.json"
	@echo "make reconfigure N=1024 FAULTY=3,17,200     the configuration that keeps the most healthy nodes, and the largest fault-free subcube"
	@echo "make reconfiguration                        reconfigured cube vs largest subcube, 1024 nodes, 1..32 faults (half a minute): results/reconfiguration.*"
	@echo "make results                               which results/ files today's code would make otherwise, and how to remake each"
	@echo "make design-digests                        record the generated designs' digests under the version: CHANGELOG.md"
	@echo "make formal                                 SymbiYosys: router proofs; fabrics n = 3..6 proved safe (PDR), delivery BMC"

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null || \
		{ echo "error: ihcube needs Python 3.11 or newer; '$(PYTHON)' is $$($(PYTHON) --version 2>&1). Set PYTHON=python3.11 (or newer)." >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# constraints.txt: the exact versions tested (pyproject.toml gives ranges).
$(BASE): pyproject.toml constraints.txt | $(BIN)/python
	$(BIN)/python -m pip install --quiet -c constraints.txt -e .
	@touch $@

$(STAMP): pyproject.toml constraints.txt | $(BIN)/python
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	@touch $@ $(BASE)

verilog: $(BASE)
	@$(BIN)/ihcube verilog $(FABRIC_OPTIONS) --out=gen $(if $(FUSESOC),--fusesoc)

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
	$(BIN)/ihcube bench --out results

bench-model: $(STAMP)
	$(BIN)/ihcube bench-model --threads 2 --out results

bench-wormhole: $(STAMP)
	$(BIN)/ihcube bench-wormhole --out results

cocotb: $(STAMP) system-tools
	@$(BIN)/ihcube cocotb $(FABRIC_OPTIONS) $(if $(WAVES),--waves)

lint: $(STAMP) system-tools
	@$(BIN)/ihcube lint $(FABRIC_OPTIONS)

deadlock: $(STAMP)
	$(BIN)/ihcube deadlock --max-nodes 4096

stress: $(STAMP)
	@$(BIN)/ihcube stress $(FABRIC_OPTIONS) --cycles='$(CYCLES)' --seed='$(SEED)' \
		--backend='$(BACKEND)' $(if $(THREADS),--threads='$(THREADS)') \
		$(if $(FAULTS),--faults='$(FAULTS)')

# The file is named by the stages: results/stress_campaign.json, _s1.json, _s1_g1_e1.json, ...
stress-campaign: $(STAMP)
	$(BIN)/ihcube stress --campaign $(EXPERIMENT_OPTIONS) --jobs $(JOBS) $(THREADS_OPTION) \
		--out results/

formal: $(STAMP) system-tools
	$(BIN)/ihcube formal --jobs $(JOBS)

# SWITCHING=wormhole runs each experiment's wormhole version (docs/wormhole-model.md).
ifeq ($(SWITCHING),wormhole)
sweep: $(STAMP)
	@$(BIN)/ihcube sweep --set wormhole-quick $(EXPERIMENT_OPTIONS) --jobs $(JOBS) --out results \
		--beside results/sweep_quick.csv

sweep-full: $(STAMP)
	@$(BIN)/ihcube sweep --set wormhole $(EXPERIMENT_OPTIONS) --jobs $(JOBS) --out results \
		--beside results/sweep_full.csv
else
sweep: $(STAMP)
	@$(BIN)/ihcube sweep --set quick $(EXPERIMENT_OPTIONS) --jobs $(JOBS) $(THREADS_OPTION) \
		--out results
	@$(BIN)/ihcube sweep --set wormhole-quick --jobs $(JOBS) --out results --beside results/sweep_quick.csv

sweep-full: $(STAMP)
	@$(BIN)/ihcube sweep --set full $(EXPERIMENT_OPTIONS) --jobs $(JOBS) $(THREADS_OPTION) \
		--out results
endif

saturation: $(STAMP)
	@$(BIN)/ihcube saturation $(EXPERIMENT_OPTIONS) $(call option,SIZES,sizes) --jobs $(JOBS) \
		$(THREADS_OPTION) --out results

# Kept for one release: the switching mode is an option of each target now.
sweep-wormhole saturation-wormhole stress-campaign-wormhole: $(STAMP)
	@echo "make $@ is deprecated: use make $(subst -wormhole,,$(subst sweep-wormhole,sweep-full,$@)) SWITCHING=wormhole" >&2
	@$(MAKE) --no-print-directory $(subst -wormhole,,$(subst sweep-wormhole,sweep-full,$@)) SWITCHING=wormhole

collectives: $(STAMP)
	@$(BIN)/ihcube collectives --ports $(COLLECTIVE_PORTS) --jobs $(JOBS) \
		$(if $(THREADS),--threads='$(THREADS)') --out results

# The faulty routers of make reconfigure (docs/reconfiguration.md), e.g. FAULTY=3,17,200.
FAULTY ?=
reconfigure: $(BASE)
	@$(BIN)/ihcube reconfigure --nodes='$(N)' --faulty='$(FAULTY)'

reconfiguration: $(STAMP)
	@$(BIN)/ihcube reconfigure-experiment --out results

analysis: $(STAMP)
	@$(BIN)/ihcube analyze --sizes 1024,1048,1114,1818,2048 --pattern uniform,sphere,decreasing \
		--order msb,lsb --reading literal,exclusive --saturation results/saturation.json \
		--out results
	@$(BIN)/ihcube analyze --scan 4096 --order msb,lsb --out results

synth: $(STAMP)
	@$(BIN)/ihcube synth $(FABRIC_OPTIONS) --family='$(FAMILY)' \
		$(if $(SYNTH_OPTS),--synth-opts='$(SYNTH_OPTS)') \
		$(if $(PNR_MINUTES),--pnr-minutes='$(PNR_MINUTES)') $(if $(NO_PLACE),--no-place) \
		$(if $(PLACER),--placer='$(PLACER)') --out results

bitstream: $(STAMP)
	@$(BIN)/ihcube bitstream --board='$(BOARD)' $(FABRIC_OPTIONS) $(if $(CLOCK_MHZ),--clock-mhz='$(CLOCK_MHZ)') $(if $(SYNTH_OPTS),--synth-opts='$(SYNTH_OPTS)') \
		$(if $(PLACER),--placer='$(PLACER)') --out results

synth-table: $(STAMP)
	@$(BIN)/ihcube synth-table --family='$(FAMILY)' $(if $(SYNTH_OPTS),--synth-opts='$(SYNTH_OPTS)') \
		$(if $(PNR_MINUTES),--pnr-minutes='$(PNR_MINUTES)') \
		$(if $(PLACER),--placer='$(PLACER)') --out results

results: $(STAMP)
	@$(BIN)/ihcube results --folder results

throughput: $(STAMP)
	@$(BIN)/ihcube throughput --folder results --family='$(FAMILY)' --out results

# The design digests of tests/test_version.py's configurations, under the version (CHANGELOG.md).
design-digests: $(STAMP)
	@$(BIN)/python tests/test_version.py

clean:
	rm -rf gen/*.v gen/*.core gen/*.vlt .pytest_cache
