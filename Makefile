# pgleader: run one command on exactly one machine of a fleet at a time.
#
#   make              build ./pgleader
#   make check        install missing packages (as root), run every test
#   make demo         two nodes, kill the leader, watch the other take over
#   make bench        failover, schedule, controls and fleet benchmarks (not part of check)
#   make install      PREFIX=/usr/local DESTDIR=
#   make dist         dist/pgleader-VERSION.tar.gz, reproducible
#   make deb, rpm     dist/pgleader_VERSION-1_ARCH.deb, dist/pgleader-VERSION-1.ARCH.rpm
#   make package-check  build, lint, install, run and purge the packages (root)
#
#   make unit-pg      the ledger, lease and controls statements against a
#                     throwaway PostgreSQL (part of check, not of unit)
#   tests/mutants/run.sh  how many one-line mutants the tests catch (slow)
#
#   make sanitize     ASan+UBSan build in build/asan/, valgrind on ./pgleader
#   make coverage     gcov build in build/cov/, unit and integration tests
#
# Switches: WERROR=1 (CI), SANITIZE=address,undefined, COVERAGE=1,
# BUILDDIR=DIR (objects, pgleader and the unit tests there, not in the tree;
# sanitize and coverage use their own, so neither touches the tree's build).

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
DATADIR ?= $(PREFIX)/share
SYSCONFDIR ?= /etc
UNITDIR ?= $(PREFIX)/lib/systemd/system
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
TMPFILESDIR ?= $(PREFIX)/lib/tmpfiles.d
# The one place the version is written: the VERSION file. The Debian
# changelog, the RPM spec and CHANGELOG.md are checked against it
# (tests/check-version.sh).
VERSION := $(shell cat VERSION)

CC ?= cc
PKG_CONFIG ?= pkg-config
PYTHON ?= /usr/bin/python3

WARNINGS := -Wall -Wextra -Wformat=2 -Wshadow -Wstrict-prototypes \
	-Wmissing-prototypes -Wpointer-arith -Wundef -Wswitch-enum
# CPPFLAGS, CFLAGS and LDFLAGS are the caller's (dpkg-buildflags, rpm's
# %set_build_flags) and come last. _FORTIFY_SOURCE is set only when they do
# not set it: a second, different definition is an error under -Werror.
HARDENING := -fstack-protector-strong -fPIE
ifeq ($(findstring _FORTIFY_SOURCE,$(CPPFLAGS) $(CFLAGS)),)
HARDENING += -U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=2
endif
# src/ shows the shape (DESIGN 14): decide/ (pure deciders), act/ (what
# carries their actions out), observe/, cli/, settings/, and the glue at
# the top; tests/check-layers.sh (make lint) keeps decide/ free of the
# others, of libev and libpq, of clocks and of logging.
SRC_DIRS := src src/decide src/act src/observe src/cli src/settings
CFLAGS ?= -O2 -g
LIB_PKGS := libpq libsystemd inih libmicrohttpd jansson libcurl
ALL_CFLAGS := -std=c11 -D_GNU_SOURCE $(addprefix -I,$(SRC_DIRS)) -DPGLEADER_VERSION='"$(VERSION)"' \
	$(WARNINGS) $(HARDENING) $(CPPFLAGS) $(CFLAGS) \
	$(shell $(PKG_CONFIG) --cflags $(LIB_PKGS) 2>/dev/null)
ALL_LDFLAGS := -pie -Wl,-z,relro,-z,now $(LDFLAGS)
LIBS := $(shell $(PKG_CONFIG) --libs $(LIB_PKGS) 2>/dev/null) -lev -lm
# pgleader itself loads libmicrohttpd and libcurl only when configured, and
# libsystemd only under systemd (src/dynlib.c): they are not linked, which
# keeps them out of a plain node's memory and start; the packages name them
# as dependencies.
PGLEADER_LIBS := $(shell $(PKG_CONFIG) --libs libpq inih jansson \
	2>/dev/null) -lev -lm -ldl
JANSSON_LIBS := $(shell $(PKG_CONFIG) --libs jansson 2>/dev/null)
PQ_LIBS := $(shell $(PKG_CONFIG) --libs libpq 2>/dev/null)
MHD_LIBS := $(shell $(PKG_CONFIG) --libs libmicrohttpd 2>/dev/null)
CURL_LIBS := $(shell $(PKG_CONFIG) --libs libcurl 2>/dev/null)
CHECK_LIBS := $(shell $(PKG_CONFIG) --libs check 2>/dev/null)

ifeq ($(WERROR),1)
ALL_CFLAGS += -Werror
endif
ifneq ($(SANITIZE),)
ALL_CFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer
ALL_LDFLAGS += -fsanitize=$(SANITIZE)
endif
ifeq ($(COVERAGE),1)
ALL_CFLAGS += --coverage -O0
ALL_LDFLAGS += --coverage
endif

# B: where the build goes, "" (the tree) or "DIR/".
B := $(if $(BUILDDIR),$(patsubst %/,%,$(BUILDDIR))/,)
ASAN_DIR := build/asan
COV_DIR := build/cov

SRCS := $(wildcard $(addsuffix /*.c,$(SRC_DIRS)))
OBJS := $(patsubst %.c,$(B)%.o,$(SRCS))
HDRS := $(wildcard $(addsuffix /*.h,$(SRC_DIRS)))

UNIT_TESTS := $(addprefix $(B),tests/unit/test_config tests/unit/test_options \
	tests/unit/test_value tests/unit/test_election \
	tests/unit/test_log tests/unit/test_child tests/unit/test_metrics \
	tests/unit/test_http tests/unit/test_lease_sql tests/unit/test_failsafe \
	tests/unit/test_schedule tests/unit/test_tickplan)

# Everything is built again when the flags change (WERROR=1 after a plain
# build, say), without a make clean: the flags of the last build are kept in
# a file that every object and test depends on, rewritten only when they
# differ.
BUILD_FLAGS := $(B).build-flags
FLAGS_NOW := $(ALL_CFLAGS) | $(ALL_LDFLAGS) | $(LIBS)
ifneq ($(FLAGS_NOW),$(file <$(BUILD_FLAGS)))
$(shell mkdir -p $(addprefix $(B),$(SRC_DIRS)) $(B)tests/unit)
$(file >$(BUILD_FLAGS),$(FLAGS_NOW))
endif
DEPS := $(HDRS) Makefile $(BUILD_FLAGS)

.PHONY: all check unit integration deps demo bench install uninstall clean \
	lint sanitize coverage cppcheck shellcheck complexity metrics-lint dist deb rpm \
	package-check schedule-diff unit-pg

# Test helpers, built beside pgleader: two for the integration tests, which
# find them through PGLEADER_FENCE_DRIVER and PGLEADER_CLOCKSHIFT, or in the
# tree; the benchmark's C commands (PGLEADER_STAMPJOB, or in the tree, and the
# libpq floor tests/pqfloor); the schedule arithmetic on stdin, for make
# schedule-diff.
HELPERS := $(B)tests/fence_driver $(B)tests/clockshift.so $(B)tests/stampjob \
	$(B)tests/pqfloor $(B)tests/schedule_oracle
helper_env = PGLEADER_BIN=$(abspath $(1)/pgleader) \
	PGLEADER_FENCE_DRIVER=$(abspath $(1)/tests/fence_driver) \
	PGLEADER_CLOCKSHIFT=$(abspath $(1)/tests/clockshift.so) \
	PGLEADER_STAMPJOB=$(abspath $(1)/tests/stampjob)
all: $(B)pgleader $(HELPERS)

$(B)pgleader: $(OBJS)
	$(CC) $(ALL_LDFLAGS) -o $@ $(OBJS) $(PGLEADER_LIBS)

# The schedule arithmetic: the cron fields (schedule.c), the zone's offsets
# (zone.c), @every's duration (value.c).
SCHEDULE_SRCS := src/decide/schedule.c src/decide/zone.c src/settings/value.c

# The lease on its own, driven from stdin by the integration tests
# (tests/integration/test_fence_lease.py); built with the tree, never installed.
DRIVER_OBJS := $(addprefix $(B),src/act/lease.o src/act/lease_conn.o src/act/lease_sql.o src/log.o)
$(B)tests/fence_driver: tests/fence_driver.c $(DRIVER_OBJS) $(DEPS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(DRIVER_OBJS) $(LIBS)

$(B)tests/schedule_oracle: tests/schedule_oracle.c $(SCHEDULE_SRCS) $(DEPS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(SCHEDULE_SRCS)

$(B)tests/stampjob: tests/stampjob.c $(DEPS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $<

# The benchmark's one-shot floor: one libpq connection, one lock query.
$(B)tests/pqfloor: tests/pqfloor.c $(DEPS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(shell $(PKG_CONFIG) --libs libpq)

# The integration tests step pgleader's wall clock with this LD_PRELOAD
# shim. Never sanitized: it would have to come after the sanitizer runtime.
$(B)tests/clockshift.so: tests/clockshift.c Makefile
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARNINGS) $(if $(filter 1,$(WERROR)),-Werror) \
		$(CFLAGS) -fPIC -shared -o $@ $<

$(B)src/%.o: src/%.c $(DEPS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

# Unit tests link only the module under test.
# The table engine: what config.c's table and test_options' own run on.
OPTIONS_SRCS := src/settings/options.c src/settings/setting.c src/settings/inifile.c src/settings/value.c src/settings/jobproc.c
$(B)tests/unit/test_config: tests/unit/test_config.c src/settings/config.c src/decide/schedule.c src/decide/zone.c $(OPTIONS_SRCS) $(DEPS)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< src/settings/config.c src/decide/schedule.c src/decide/zone.c $(OPTIONS_SRCS) $(LIBS) $(CHECK_LIBS)
$(B)tests/unit/test_options: tests/unit/test_options.c $(OPTIONS_SRCS) $(DEPS)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(OPTIONS_SRCS) $(LIBS) $(CHECK_LIBS)
$(B)tests/unit/test_value: tests/unit/test_value.c src/settings/value.c $(DEPS)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< src/settings/value.c $(CHECK_LIBS)
# A job's environment, its file, shell syntax, users and groups (DESIGN 13).
UNIT_TESTS += $(B)tests/unit/test_jobproc
$(B)tests/unit/test_jobproc: tests/unit/test_jobproc.c src/settings/jobproc.c src/settings/value.c $(DEPS)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< src/settings/jobproc.c src/settings/value.c $(CHECK_LIBS)
# The election is six files: the core, the standby states, the command's
# states, the fence, failsafe, the operator controls.
ELECTION_SRCS := src/decide/election.c src/decide/election_standby.c src/decide/election_command.c \
	src/decide/election_fence.c src/decide/election_failsafe.c src/decide/election_controls.c
# Both run on the daemon's parameters: params.c over config.c's defaults.
DAEMON_PARAMS_SRCS := tests/unit/daemon_params.c src/decide/params.c src/settings/config.c \
	src/decide/schedule.c src/decide/zone.c $(OPTIONS_SRCS)
$(B)tests/unit/test_election: tests/unit/test_election.c $(ELECTION_SRCS) $(DAEMON_PARAMS_SRCS) $(DEPS)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(ELECTION_SRCS) $(DAEMON_PARAMS_SRCS) $(SIM_LIBS) $(CHECK_LIBS)
# The operator controls' decisions, with the daemon's parameters.
UNIT_TESTS += $(B)tests/unit/test_election_controls
$(B)tests/unit/test_election_controls: tests/unit/test_election_controls.c $(ELECTION_SRCS) $(DAEMON_PARAMS_SRCS) $(DEPS)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(ELECTION_SRCS) $(DAEMON_PARAMS_SRCS) $(SIM_LIBS) $(CHECK_LIBS)
# The test defines sd_journal_sendv itself, so it links no libsystemd: it
# sees the journal fields pgleader would send without needing a journald.
$(B)tests/unit/test_log: tests/unit/test_log.c src/log.c $(DEPS)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< src/log.c $(JANSSON_LIBS) $(CHECK_LIBS)
# The planning rule on the real schedule arithmetic.
TICKPLAN_SRCS := src/decide/tickplan.c $(SCHEDULE_SRCS)
# The job decider (DESIGN 14), pure: no libev, no libpq, no clock.
JOBS_STEP_SRCS := src/decide/jobs_step.c src/decide/jobs_retry.c $(TICKPLAN_SRCS)
$(B)tests/unit/test_tickplan: tests/unit/test_tickplan.c $(TICKPLAN_SRCS) $(DEPS)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(TICKPLAN_SRCS) $(CHECK_LIBS)
$(B)tests/unit/test_lease_sql: tests/unit/test_lease_sql.c src/act/lease_sql.c $(DEPS)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< src/act/lease_sql.c $(CHECK_LIBS)
# The ledger's SQL text, alone (the SQL is run by test_ledger_cli.py).
UNIT_TESTS += $(B)tests/unit/test_ledger_sql
$(B)tests/unit/test_ledger_sql: tests/unit/test_ledger_sql.c src/act/ledger_sql.c $(DEPS)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< src/act/ledger_sql.c $(CHECK_LIBS)
# ledger.c's queue over a fake session (what a lost session keeps).
UNIT_TESTS += $(B)tests/unit/test_ledger
$(B)tests/unit/test_ledger: tests/unit/test_ledger.c src/act/ledger.c src/act/ledger_sql.c tests/unit/log_stub.c $(DEPS)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< src/act/ledger.c src/act/ledger_sql.c tests/unit/log_stub.c $(CHECK_LIBS)
# jobs.c's planning over a fake ledger and fake commands, on a monotonic
# clock the test moves (test_clock_gettime).
UNIT_TESTS += $(B)tests/unit/test_jobs
$(B)tests/unit/test_jobs: tests/unit/test_jobs.c src/act/jobs.c src/act/output.c $(JOBS_STEP_SRCS) tests/unit/log_stub.c $(DEPS)
	$(CC) $(ALL_CFLAGS) -Dclock_gettime=test_clock_gettime $(ALL_LDFLAGS) -Itests/unit -o $@ $< src/act/jobs.c src/act/output.c $(JOBS_STEP_SRCS) tests/unit/log_stub.c -lev -lm $(CHECK_LIBS)
# The job decider alone, on the configuration config_load makes of a jobs
# file, with a fake clock: the actions are the answer.
UNIT_TESTS += $(B)tests/unit/test_jobs_step
JOBS_STEP_TEST_SRCS := src/decide/jobs_step.c src/decide/jobs_retry.c src/decide/tickplan.c src/settings/config.c src/decide/schedule.c \
	src/decide/zone.c $(OPTIONS_SRCS)
$(B)tests/unit/test_jobs_step: tests/unit/test_jobs_step.c $(JOBS_STEP_TEST_SRCS) $(DEPS)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(JOBS_STEP_TEST_SRCS) $(SIM_LIBS) $(CHECK_LIBS)
# The controls' SQL text (the SQL is run by test_controls_cli.py).
UNIT_TESTS += $(B)tests/unit/test_controls_sql
$(B)tests/unit/test_controls_sql: tests/unit/test_controls_sql.c src/act/controls_sql.c src/act/ledger_sql.c $(DEPS)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< src/act/controls_sql.c src/act/ledger_sql.c $(CHECK_LIBS)
# Every statement of ledger_sql.c, lease_sql.c and controls_sql.c run
# against a throwaway PostgreSQL (pgtemp.c, one per run): make unit-pg, by
# make check, not by make unit (the package builds have no server).
SQL_PG_SRCS := tests/unit/pgtemp.c src/act/ledger_sql.c src/act/lease_sql.c src/act/controls_sql.c
$(B)tests/unit/test_sql_pg: tests/unit/test_sql_pg.c $(SQL_PG_SRCS) tests/unit/pgtemp.h $(DEPS)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -Itests/unit -o $@ $< $(SQL_PG_SRCS) $(PQ_LIBS) $(CHECK_LIBS) -lm
# A switchover's plan: controls_cli.c links the shared CLI modules.
CONTROLS_CLI_SRCS := src/cli/controls_cli.c src/act/controls_sql.c src/cli/cli.c src/cli/cli_ledger.c \
	src/cli/cli_sessions.c \
	src/act/ledger_sql.c src/act/lease_sql.c src/log.c $(ELECTION_SRCS) $(SCHEDULE_SRCS)
UNIT_TESTS += $(B)tests/unit/test_controls_cli
$(B)tests/unit/test_controls_cli: tests/unit/test_controls_cli.c $(CONTROLS_CLI_SRCS) $(DEPS)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(CONTROLS_CLI_SRCS) $(LIBS) $(CHECK_LIBS)
# child.c forks real processes; its log calls go to a stub. stdfd.c, the
# descriptors the command inherits, is tested here too.
CHILD_SRCS := src/act/child.c src/act/guard.c src/act/proctree.c src/act/stdfd.c tests/unit/log_stub.c
$(B)tests/unit/test_child: tests/unit/test_child.c $(CHILD_SRCS) $(DEPS)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(CHILD_SRCS) -lev $(CHECK_LIBS)

$(B)tests/unit/test_schedule: tests/unit/test_schedule.c $(SCHEDULE_SRCS) $(DEPS)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(SCHEDULE_SRCS) $(CHECK_LIBS)

# metrics.c is pure; election.c gives it the state names and bucket bounds.
METRICS_DEPS := src/observe/metrics.c $(ELECTION_SRCS)
$(B)tests/unit/test_metrics: tests/unit/test_metrics.c $(METRICS_DEPS) $(DEPS)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(METRICS_DEPS) $(JANSSON_LIBS) $(CHECK_LIBS) -lm

# A real server on a real loop, its clients in a thread (libcurl, raw sockets).
HTTP_DEPS := src/observe/http.c src/observe/procstat.c src/act/proctree.c tests/unit/log_stub.c $(METRICS_DEPS)
$(B)tests/unit/test_http: tests/unit/test_http.c $(HTTP_DEPS) $(DEPS)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -pthread -o $@ $< $(HTTP_DEPS) $(MHD_LIBS) $(JANSSON_LIBS) $(CURL_LIBS) -lev $(CHECK_LIBS) -lm

# Members are real servers (http.c) on the loop of the failsafe client under
# test; no thread: everything runs on one libev loop, as in pgleader.
FAILSAFE_DEPS := src/act/failsafe.c src/settings/fleet.c src/act/curlev.c $(HTTP_DEPS)
$(B)tests/unit/test_failsafe: tests/unit/test_failsafe.c $(FAILSAFE_DEPS) $(DEPS)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(FAILSAFE_DEPS) $(MHD_LIBS) $(JANSSON_LIBS) $(CURL_LIBS) -lev $(CHECK_LIBS) -lm

# The deterministic simulation of a fleet (DESIGN 12, tests/sim/README.md):
# the real election on simulated nodes, with the daemon's parameters
# (params.c over config.c). make sim SEEDS=N runs more seeds; the seeds in
# tests/sim/known.txt find a known bug and are left out until it is fixed.
SEEDS ?= 5000
# Seeds of the operator controls (switchovers and pauses among the faults,
# DESIGN 11); 1000001 caught a resume while the command was stopping.
CONTROLS_SEEDS ?= 2000
# Seeds with jobs (DESIGN 10): schedules, the ledger, the tick invariants.
JOBS_SEEDS ?= 500
# Seeds with runs asked for now and each job's overlap (DESIGN 13), on
# seeds of their own so that the jobs seeds' streams stay as they were.
TRIGGER_SEEDS ?= 300
# The daemon's supervisor.c is linked too, and the job layer of DESIGN 10
# (jobs.c, jobs_step.c, tickplan.c, ledger.c and its SQL texts): their clock is the
# simulated node's (SIM_DEFS), their I/O (sessions, statements, commands,
# timers, failsafe peers) the ports of tests/sim/ports.c over the models.
# The linker wraps election_new and election_step, so that the simulator
# knows each node's election (the invariants) and traces each step.
SIM_OTHER_SRCS := src/supervisor.c src/act/runner.c src/act/runner_command.c src/act/runner_jobs.c src/decide/params.c src/settings/config.c src/decide/schedule.c src/decide/zone.c $(OPTIONS_SRCS) src/settings/fleet.c \
	src/act/jobs.c src/decide/jobs_step.c src/decide/jobs_retry.c src/decide/tickplan.c src/act/ledger.c src/act/ledger_sql.c
# the simulator's own files: its core, the models, the ports, the checks
SIM_FILES := tests/sim/sim.c tests/sim/network.c tests/sim/database.c \
	tests/sim/ports.c tests/sim/invariants.c tests/sim/faults.c
SIM_SRCS := $(SIM_FILES) $(ELECTION_SRCS) $(SIM_OTHER_SRCS)
SIM_LIBS := $(shell $(PKG_CONFIG) --libs inih 2>/dev/null) -lm
SIM_DEFS := -Dclock_gettime=sim_clock_gettime -Wl,--wrap=election_new,--wrap=election_step
$(B)tests/sim/sim: $(SIM_SRCS) tests/sim/sim.h $(DEPS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(SIM_DEFS) $(ALL_LDFLAGS) -o $@ $(SIM_SRCS) $(SIM_LIBS)
.PHONY: sim sim-mutants
sim: $(B)tests/sim/sim
	$(if $(filter /%,$(B)),,./)$(B)tests/sim/sim --seeds $(SEEDS) --known tests/sim/known.txt \
		--regress tests/sim/regress.txt
	$(if $(filter /%,$(B)),,./)$(B)tests/sim/sim --controls --first 1000001 \
		--seeds $(CONTROLS_SEEDS) --known tests/sim/known.txt
	$(if $(filter /%,$(B)),,./)$(B)tests/sim/sim --jobs --first 2000001 \
		--seeds $(JOBS_SEEDS) --known tests/sim/known.txt --regress tests/sim/regress-jobs.txt
	$(if $(filter /%,$(B)),,./)$(B)tests/sim/sim --triggers --first 3000001 \
		--seeds $(TRIGGER_SEEDS) --known tests/sim/known.txt --regress tests/sim/regress-triggers.txt
# Each deliberate fault of tests/sim/mutants/ must make the default seeds fail.
sim-mutants:
	SIM_LIBS='$(SIM_LIBS)' SIM_ELECTION='$(ELECTION_SRCS)' SIM_JOBS_SEEDS='$(JOBS_SEEDS)' \
	SIM_TRIGGER_SEEDS='$(TRIGGER_SEEDS)' \
	SIM_OTHERS='$(SIM_OTHER_SRCS)' tests/sim/mutants.sh $(or $(B),build/) $(SEEDS) $(CC) \
		$(ALL_CFLAGS) $(SIM_DEFS) $(ALL_LDFLAGS)

# promtool's own lint over the text of a standby, a leader with every
# counter moved, and odd label values.
metrics-lint: $(B)tests/unit/test_metrics
	@set -e; for s in standby leader odd jobs; do \
		echo "== promtool check metrics ($$s)"; \
		$(B)tests/unit/test_metrics --dump $$s | promtool check metrics; \
	done

# The shipped alerts (packaging/prometheus/): promtool's lint, then its
# unit tests of each alert, firing and silent.
.PHONY: prometheus-rules
prometheus-rules:
	promtool check rules packaging/prometheus/pgleader.rules.yml
	cd packaging/prometheus && promtool test rules pgleader.rules.test.yml

deps:
	@tests/install-deps.sh

# schedule.c against python3-croniter over 10,000 random expressions and
# start times (tests/schedule_diff.py; SCHEDULE_DIFF_ARGS='--seed N
# --count N'). Run by check, not by unit: the package builds run unit
# without croniter.
schedule-diff: $(B)tests/schedule_oracle
	$(PYTHON) tests/schedule_diff.py --driver $(B)tests/schedule_oracle $(SCHEDULE_DIFF_ARGS)

unit: $(UNIT_TESTS)
	@set -e; for t in $(UNIT_TESTS); do echo "== $$t"; CK_FORK=yes $(if $(filter /%,$(B)),,./)$$t; done

unit-pg: $(B)tests/unit/test_sql_pg
	CK_FORK=yes $(if $(filter /%,$(B)),,./)$(B)tests/unit/test_sql_pg

# The integration suite drives real pgleader processes against a real
# PostgreSQL; PGLEADER_WRAPPER runs each one under valgrind or a sanitizer build.
# Its test files run on a worker per core, four at most (pytest-xdist; a
# file's tests stay on one worker, with the servers they share): most of a
# test is waiting, and two workers take the suite from 19 minutes to 11 on
# two cores. PYTEST_WORKERS=1: one process, in the files' order.
PYTEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); [ "$$n" -gt 4 ] && n=4; echo $$n)
PYTEST_PAR = $(if $(filter-out 0 1,$(PYTEST_WORKERS)),-n $(PYTEST_WORKERS) --dist loadfile)
integration: $(B)pgleader $(HELPERS)
	$(if $(B),$(call helper_env,$(B)) )$(PYTHON) -m pytest -q $(PYTEST_PAR) tests/integration $(PYTEST_ARGS)

lint: pgleader cppcheck shellcheck complexity metrics-lint prometheus-rules
	tests/check-docs.sh ./pgleader
	mandoc -Tlint -W warning man/pgleader.1 man/pgleader.conf.5
	tests/check-units.sh
	tests/check-completion.sh ./pgleader
	tests/check-version.sh ./pgleader
	tests/state-table.py --check
	tests/check-readme.sh
	tests/check-builddir.sh
	tests/check-layers.sh $(ALL_CFLAGS)

# variableScope is suppressed: the house style declares a function's
# variables at the top of it or of its block, and narrowing them further is
# taste, not a defect. cppcheck reads our headers, not the system's.
cppcheck:
	cppcheck -q --error-exitcode=1 --std=c11 -D_GNU_SOURCE $(addprefix -I,$(SRC_DIRS)) \
		-DPGLEADER_VERSION='"$(VERSION)"' \
		--enable=warning,style,performance,portability --inline-suppr \
		--suppress=variableScope src/

# Every shell script in the tree, found by its first line, so that a new
# one is checked without being listed here.
shellcheck:
	find . -name .git -prune -o -type f -print | sort | while read -r f; do \
		head -n 1 "$$f" | grep -qE '^#!.*/(env +)?(ba|da)?sh( |$$)' && \
			printf '%s\n' "$$f"; \
	done | xargs -r shellcheck

# No function in src/ or in the tests' C (the simulator's too) over 60 lines or over a complexity
# of 15 (either of pmccabe's two: modified and traditional cyclomatic).
complexity:
	@pmccabe $(SRCS) tests/sim/*.c tests/unit/*.c tests/*.c | awk '$$1 > 15 || $$2 > 15 || $$5 > 60 { \
		printf "complexity: %s %s: complexity %d/%d, %d lines (bounds 15, 60)\n", \
			$$6, $$7, $$1, $$2, $$5; bad = 1 } END { exit bad }'

# No make clean: the tree stays usable while check runs, and the flags file
# rebuilds whatever was built with other flags.
check: deps
	$(MAKE) WERROR=1 all unit unit-pg schedule-diff sim sim-mutants lint
	$(MAKE) WERROR=1 integration
	$(MAKE) sanitize

# A second build with ASan+UBSan in its own directory, and valgrind on the
# release build, over the integration tests that exercise the most code
# paths; the harness runs the binary PGLEADER_BIN names.
sanitize:
	$(MAKE) BUILDDIR=$(ASAN_DIR) WERROR=1 SANITIZE=address,undefined all unit
	$(call helper_env,$(ASAN_DIR)) PGLEADER_SANITIZED=1 \
		$(PYTHON) -m pytest -q $(PYTEST_PAR) tests/integration -m 'not slow' $(PYTEST_ARGS)
	$(MAKE) WERROR=1 all
	PGLEADER_WRAPPER=valgrind $(PYTHON) -m pytest -q tests/integration -m valgrind $(PYTEST_ARGS)

# gcov counts in build/cov/ from the unit tests and the integration tests;
# the summary, a file per line pair, in build/cov/coverage.txt.
coverage:
	$(MAKE) BUILDDIR=$(COV_DIR) COVERAGE=1 all unit
	$(call helper_env,$(COV_DIR)) \
		$(PYTHON) -m pytest -q tests/integration -m 'not slow' $(PYTEST_ARGS)
	cd $(COV_DIR) && for f in $(SRCS); do gcov -n -o $$(dirname $$f) $(CURDIR)/$$f; done | \
		grep -A1 "^File 'src/" | grep -v '^--' > coverage.txt
	@cat $(COV_DIR)/coverage.txt

# pkg-config's flags are read when make parses this file: build in a fresh
# make once deps has installed what they come from.
demo: deps
	$(MAKE) pgleader
	tests/demo.sh

bench: deps
	$(MAKE) pgleader tests/stampjob tests/pqfloor
	$(PYTHON) tests/bench.py $(BENCH_ARGS)
	$(PYTHON) tests/bench_ticks.py $(BENCH_TICKS_ARGS)
	$(PYTHON) tests/bench_controls.py $(BENCH_CONTROLS_ARGS)
	$(PYTHON) tests/bench_fleet.py $(BENCH_FLEET_ARGS)
	$(PYTHON) tests/bench_fleet.py --poll-dsn $(BENCH_FLEET_ARGS)

install: pgleader
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(SYSCONFDIR)/pgleader \
		$(DESTDIR)$(UNITDIR)
	install -m 755 pgleader $(DESTDIR)$(BINDIR)/pgleader
	install -m 644 man/pgleader.1 $(DESTDIR)$(MANDIR)/man1/pgleader.1
	install -m 644 man/pgleader.conf.5 $(DESTDIR)$(MANDIR)/man5/pgleader.conf.5
	install -m 644 conf/pgleader.conf $(DESTDIR)$(SYSCONFDIR)/pgleader/pgleader.conf.example
	install -d $(DESTDIR)$(DATADIR)/pgleader/prometheus
	install -m 644 packaging/prometheus/pgleader.rules.yml \
		$(DESTDIR)$(DATADIR)/pgleader/prometheus/pgleader.rules.yml
	sed 's|/usr/bin/pgleader|$(BINDIR)/pgleader|g' systemd/pgleader.service \
		> $(DESTDIR)$(UNITDIR)/pgleader.service
	sed 's|/usr/bin/pgleader|$(BINDIR)/pgleader|g' systemd/pgleader@.service \
		> $(DESTDIR)$(UNITDIR)/pgleader@.service
	chmod 644 $(DESTDIR)$(UNITDIR)/pgleader.service $(DESTDIR)$(UNITDIR)/pgleader@.service
	install -d $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(SYSUSERSDIR) $(DESTDIR)$(TMPFILESDIR)
	install -m 644 completion/pgleader.bash $(DESTDIR)$(BASHCOMPDIR)/pgleader
	install -m 644 systemd/pgleader.sysusers $(DESTDIR)$(SYSUSERSDIR)/pgleader.conf
	install -m 644 systemd/pgleader.tmpfiles $(DESTDIR)$(TMPFILESDIR)/pgleader.conf

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/pgleader $(DESTDIR)$(MANDIR)/man1/pgleader.1 \
		$(DESTDIR)$(MANDIR)/man5/pgleader.conf.5 \
		$(DESTDIR)$(UNITDIR)/pgleader.service $(DESTDIR)$(UNITDIR)/pgleader@.service \
		$(DESTDIR)$(BASHCOMPDIR)/pgleader $(DESTDIR)$(SYSUSERSDIR)/pgleader.conf \
		$(DESTDIR)$(TMPFILESDIR)/pgleader.conf \
		$(DESTDIR)$(DATADIR)/pgleader/prometheus/pgleader.rules.yml

# ---- Release and packages (packaging/README.md) ----
# Everything lands in $(DISTDIR). dist needs a git checkout: it packs the
# files git knows (as they are in the working tree), with the last commit's
# time on every file, so that two runs give the same bytes.
DISTDIR ?= dist
DISTNAME := pgleader-$(VERSION)

dist:
	@tests/check-version.sh
	@mkdir -p $(DISTDIR)
	@git rev-parse --git-dir >/dev/null 2>&1 || \
		{ echo "make dist: needs a git checkout" >&2; exit 1; }
	git ls-files -z | LC_ALL=C tar --null -T - --transform 's,^,$(DISTNAME)/,' \
		--sort=name --format=gnu --owner=0 --group=0 --numeric-owner \
		--mode=u+rw,go=rX \
		--mtime=@$${SOURCE_DATE_EPOCH:-$$(git log -1 --format=%ct)} -cf - \
		| gzip -n -9 > $(DISTDIR)/$(DISTNAME).tar.gz.tmp
	mv $(DISTDIR)/$(DISTNAME).tar.gz.tmp $(DISTDIR)/$(DISTNAME).tar.gz

# Built from the dist tarball in a temporary directory, not from this tree;
# both run the unit tests unless NOCHECK=1.
deb: dist
	NOCHECK=$(NOCHECK) packaging/build.sh deb $(DISTDIR)/$(DISTNAME).tar.gz $(DISTDIR)

rpm: dist
	NOCHECK=$(NOCHECK) packaging/build.sh rpm $(DISTDIR)/$(DISTNAME).tar.gz $(DISTDIR)

# As root: build, lint, install, run, verify and purge both packages. CI runs
# it after make check, which has run the unit tests: the builds skip them.
package-check:
	tests/check-dist.sh
	$(MAKE) deb rpm NOCHECK=1
	tests/check-package.sh $(DISTDIR)

clean:
	rm -f pgleader $(HELPERS) $(SRCS:.c=.o) $(UNIT_TESTS) $(B)tests/unit/test_sql_pg tests/sim/sim \
		$(SRCS:.c=.gcda) $(SRCS:.c=.gcno) tests/unit/*.gcda tests/unit/*.gcno .build-flags
	rm -rf build
