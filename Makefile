# fedfit: `make run` and `make test` work on a fresh machine.
PY ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
FMNIST_DIR := /usr/share/datasets/fashion-mnist

.PHONY: run test setup data bench clean demo

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(VPY) || $(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	# torch first, pinned, so nothing pulls a multi-GB CUDA build
	$(VPY) -m pip install -q torch==2.13.0
	$(VPY) -m pip install -q -e ".[test,ray,flower]"
	touch $(STAMP)

# Fashion-MNIST comes from Debian's dataset-fashion-mnist where apt is usable as root.
data:
	@if [ -f $(FMNIST_DIR)/train-images-idx3-ubyte.gz ]; then \
	  echo "Fashion-MNIST present in $(FMNIST_DIR)"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  (apt-get update -qq && apt-get install -y -qq dataset-fashion-mnist) || echo "could not install dataset-fashion-mnist"; \
	else \
	  echo "Fashion-MNIST missing: run 'sudo apt-get install dataset-fashion-mnist' or set data.path"; \
	fi

run: setup data
	$(VENV)/bin/fedfit run

test: setup data
	$(VPY) -m mypy src/fedfit
	$(VPY) -m pytest -q

bench: setup data
	$(VPY) bench/overhead.py

# Real deployment on loopback: a server and four device processes (examples/deploy.yaml).
demo: setup data
	PY=$(VPY) examples/deploy_demo.sh examples/deploy.yaml runs/deploy_demo

clean:
	rm -rf $(VENV) runs .pytest_cache
