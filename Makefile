# Every command of the book in one place. `make help` lists them.
#   make book   [PROFILE=smoke|book|paper]  venv + data + chapters (papermill) + HTML in _build/<profile>/
#   make test                              unit tests, the smoke and paper-mini books, nbval-lax, the pages in Chromium
PROFILE ?= book
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CH ?=
ARGS ?=

.PHONY: help setup data miniature chapters chapter book html costs exercises device-bundle unit smoke paper-mini nbval test lint clean distclean

help:
	@echo "make book [PROFILE=smoke|book|paper]   build the whole book into _build/$$PROFILE/ (default PROFILE=book)"
	@echo "make test                              unit tests + smoke book + paper-mini book and torchrun + nbval-lax + pages"
	@echo "make data                              fetch (TKBOOK_MIRROR or download), check and convert the data"
	@echo "make miniature                         the paper-shaped miniature of MS MARCO (data/msmarco-mini) from real data"
	@echo "make paper-mini                        the paper's code path end to end on the miniature: its book and torchrun"
	@echo "make chapter CH=01_data_and_first_stage [PROFILE=...] [ARGS='--param key=value']"
	@echo "make costs [PROFILE=...]               each executed chapter's time and its 5 slowest cells"
	@echo "make exercises                         student notebooks exercises/NN_topic.ipynb (chapters 2, 8 and 9, solutions stubbed, answers removed)"
	@echo "make device-bundle                     .device/: what a lent GPU machine needs besides the checkout (benchmarks/device_checks.sh)"
	@echo "make lint | clean | distclean"

# --- environment ---------------------------------------------------------------------------
$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (tkbook)" >/dev/null
	touch $@

setup: $(STAMP)

# --- data ----------------------------------------------------------------------------------
data: $(STAMP)
	$(BIN)/python -m lib.data.convert

# The paper-shaped miniature of the MS MARCO export (lib/experiments/miniature.py), what PROFILE=paper-mini reads:
# deterministic, rewritten every time (about 35 s), so a chapter re-executes only when it changed.
miniature: data
	$(BIN)/python -m lib.experiments.miniature

# --- chapters and the book -------------------------------------------------------------------
chapters: data
	$(BIN)/python -m lib.book.build --profile $(PROFILE) $(ARGS)

chapter: data
	@test -n "$(CH)" || (echo "usage: make chapter CH=01_data_and_first_stage [PROFILE=smoke]" && exit 2)
	$(BIN)/python -m lib.book.build --profile $(PROFILE) --only $(CH) $(ARGS)

# Each profile keeps its executed chapters (_build/<profile>/chapters) and its HTML
# (_build/<profile>/_build/html): `make test` (smoke) never touches a built `book` profile.
# MathJax is served from the book (_config.yml: mathjax_path, html_static_path), so formulas typeset
# offline: the es5 folder of the pinned django-static-mathjax package, copied once per venv.
MATHJAX := _build/static/mathjax

$(MATHJAX)/tex-mml-chtml.js: $(STAMP)
	rm -rf $(MATHJAX) && mkdir -p $(dir $(MATHJAX))
	cp -r "$$($(BIN)/python -c 'import mathjax, pathlib; print(pathlib.Path(mathjax.__file__).parent / "static/mathjax/es5")')" $(MATHJAX)

html: $(STAMP) $(MATHJAX)/tex-mml-chtml.js
	$(BIN)/python -m lib.book.build --profile $(PROFILE) --stage
	$(BIN)/jupyter-book build . --path-output _build/$(PROFILE) --warningiserror --keep-going --quiet
	@echo "book ($(PROFILE) profile): $(CURDIR)/_build/$(PROFILE)/_build/html/index.html"

book: chapters
	$(MAKE) html

costs: $(STAMP)
	$(BIN)/python -m lib.book.build --profile $(PROFILE) --costs

# What a lent GPU machine is sent besides the checkout (.device/, git-ignored, under 64 MiB with it): a float16
# copy of MiniLM and the converted data; benchmarks/device_checks.sh runs the device checks there.
device-bundle: data
	rm -rf .device && mkdir -p .device
	$(BIN)/python -m lib.representations.minilm_copy .device/minilm
	tar czf .device/data.tar.gz data/converted "data/raw/$$($(BIN)/python -c 'from lib.representations.bert import BERT_VOCAB_NAME; print(BERT_VOCAB_NAME)')"
	@du -sh .device

# Student versions of chapters 2, 8 and 9: every cell tagged `exercise` with its solution stubbed.
exercises: $(STAMP)
	$(BIN)/python -m lib.book.exercises --out exercises

# --- tests ---------------------------------------------------------------------------------
unit: data
	$(BIN)/python -m pytest tests -q --ignore=tests/paper_mini

smoke:
	$(MAKE) book PROFILE=smoke

# The paper's code path proven end to end (issue 43): every chapter under PROFILE=paper-mini, executed and rendered,
# then both torchrun entry points with 2 CPU processes on the miniature, and no chapter part skipped silently.
paper-mini:
	@start=$$(date +%s); \
	$(MAKE) miniature && $(MAKE) book PROFILE=paper-mini && \
	TKBOOK_REQUIRE_PAPER_MINI=1 $(BIN)/python -m pytest -q -p no:cacheprovider tests/paper_mini && \
	echo "make paper-mini: $$(( $$(date +%s) - start )) s"

nbval: $(STAMP)
	$(BIN)/python -m pytest --nbval-lax -q -p no:cacheprovider _build/smoke/chapters/[0-9]*.ipynb
	TKBOOK_REQUIRE_PAGES=1 $(BIN)/python -m pytest -q -p no:cacheprovider tests/chapters/test_pages.py \
		tests/book/test_student_notebooks.py tests/experiments/test_sparsity_probe.py tests/test_rendered_book.py

test: unit smoke paper-mini nbval

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# --- cleaning ------------------------------------------------------------------------------
clean:
	rm -rf _build book/chapters artifacts data/converted data/msmarco-mini exercises

distclean: clean
	rm -rf $(VENV) data
