# ihcube: the two commands a fresh machine needs are `make verilog N=26` and `make test`.
# The virtual environment is made on first use from pyproject.toml.

PYTHON ?= python3
VENV   ?= .venv
N      ?= 26
W      ?= 32
DEPTH  ?= 1
ORDER  ?= msb
JOBS   ?= 2

BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: help verilog test system-tools bench cocotb lint deadlock clean

help:
	@echo "make verilog N=26 [W=32 DEPTH=1 ORDER=msb]  write gen/ihcube_n<N>_w<W>.v"
	@echo "make test                                   run the test suite"
	@echo "make bench                                  measure generation time, memory, size, cells"
	@echo "make cocotb N=26 [WAVES=1]                  cocotb regression of the emitted Verilog on Icarus"
	@echo "make lint N=26                              verilator --lint-only -Wall on the emitted Verilog"
	@echo "make deadlock                               channel dependency graph acyclic for all n <= 4096"

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $@

verilog: $(STAMP)
	@$(BIN)/ihcube verilog --nodes='$(N)' --width='$(W)' --depth='$(DEPTH)' --order='$(ORDER)' --out=gen

system-tools:
	@sh .ci/system-tools.sh

test: $(STAMP) system-tools
	$(BIN)/python -m pytest -n $(JOBS) tests

bench: $(STAMP)
	$(BIN)/python -m ihcube.bench

cocotb: $(STAMP) system-tools
	@$(BIN)/python -m ihcube.cocotb_run --nodes='$(N)' --width='$(W)' --depth='$(DEPTH)' \
		--order='$(ORDER)' $(if $(WAVES),--waves)

lint: $(STAMP) system-tools
	@$(BIN)/python -m ihcube.lint --nodes='$(N)' --width='$(W)' --depth='$(DEPTH)' --order='$(ORDER)'

deadlock: $(STAMP)
	$(BIN)/python -m ihcube.deadlock --max-nodes 4096 --order msb
	$(BIN)/python -m ihcube.deadlock --max-nodes 4096 --order lsb --unicast-only

clean:
	rm -rf gen/*.v .pytest_cache
