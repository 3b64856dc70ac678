# pgleader: run one command on exactly one machine of a fleet at a time.
#
#   make              build ./pgleader
#   make check        install missing packages (as root), run every test
#   make demo         two nodes, kill the leader, watch the other take over
#   make bench        failover benchmark (not part of check)
#   make install      PREFIX=/usr/local DESTDIR=
#
# Switches: WERROR=1 (CI), SANITIZE=address,undefined, COVERAGE=1.

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
SYSCONFDIR ?= /etc
UNITDIR ?= $(PREFIX)/lib/systemd/system
VERSION := 0.1.0

CC ?= cc
PKG_CONFIG ?= pkg-config
PYTHON ?= /usr/bin/python3

WARNINGS := -Wall -Wextra -Wformat=2 -Wshadow -Wstrict-prototypes \
	-Wmissing-prototypes -Wpointer-arith -Wundef
HARDENING := -fstack-protector-strong -D_FORTIFY_SOURCE=2 -fPIE
CFLAGS ?= -O2 -g
ALL_CFLAGS := -std=c11 -D_GNU_SOURCE -DPGLEADER_VERSION='"$(VERSION)"' \
	$(WARNINGS) $(HARDENING) $(CFLAGS) \
	$(shell $(PKG_CONFIG) --cflags libpq libsystemd inih 2>/dev/null)
ALL_LDFLAGS := -pie -Wl,-z,relro,-z,now $(LDFLAGS)
LIBS := $(shell $(PKG_CONFIG) --libs libpq libsystemd inih 2>/dev/null) -lev -lm
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

SRCS := $(wildcard src/*.c)
OBJS := $(SRCS:.c=.o)
HDRS := $(wildcard src/*.h)

UNIT_TESTS := tests/unit/test_config tests/unit/test_value tests/unit/test_election \
	tests/unit/test_log tests/unit/test_child

.PHONY: all check unit integration deps demo bench install uninstall clean \
	lint sanitize

all: pgleader

pgleader: $(OBJS)
	$(CC) $(ALL_LDFLAGS) -o $@ $(OBJS) $(LIBS)

src/%.o: src/%.c $(HDRS) Makefile
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

# Unit tests link only the module under test.
tests/unit/test_config: tests/unit/test_config.c src/config.c src/value.c $(HDRS)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -Isrc -o $@ $< src/config.c src/value.c $(LIBS) $(CHECK_LIBS)
tests/unit/test_value: tests/unit/test_value.c src/value.c $(HDRS)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -Isrc -o $@ $< src/value.c $(CHECK_LIBS)
tests/unit/test_election: tests/unit/test_election.c src/election.c $(HDRS)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -Isrc -o $@ $< src/election.c $(CHECK_LIBS) -lm
tests/unit/test_log: tests/unit/test_log.c src/log.c $(HDRS)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -Isrc -o $@ $< src/log.c $(CHECK_LIBS)
# child.c forks real processes; its log calls go to a stub. stdfd.c, the
# descriptors the command inherits, is tested here too.
tests/unit/test_child: tests/unit/test_child.c src/child.c src/proctree.c src/stdfd.c \
		tests/unit/log_stub.c $(HDRS)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -Isrc -o $@ $< src/child.c src/proctree.c src/stdfd.c \
		tests/unit/log_stub.c -lev $(CHECK_LIBS)

# The integration tests step pgleader's wall clock with this LD_PRELOAD
# shim. Never sanitized: it would have to come after the sanitizer runtime.
tests/clockshift.so: tests/clockshift.c Makefile
	$(CC) -std=c11 -D_GNU_SOURCE $(WARNINGS) $(if $(filter 1,$(WERROR)),-Werror) \
		$(CFLAGS) -fPIC -shared -o $@ $<

deps:
	@tests/install-deps.sh

unit: $(UNIT_TESTS)
	@set -e; for t in $(UNIT_TESTS); do echo "== $$t"; CK_FORK=yes ./$$t; done

# The integration suite drives real pgleader processes against a real
# PostgreSQL; PGLEADER_WRAPPER runs each one under valgrind or a sanitizer build.
integration: pgleader tests/clockshift.so
	$(PYTHON) -m pytest -q tests/integration $(PYTEST_ARGS)

lint: pgleader
	tests/check-docs.sh ./pgleader
	mandoc -Tlint -W warning man/pgleader.1 man/pgleader.conf.5
	tests/check-units.sh

check: deps
	$(MAKE) clean
	$(MAKE) WERROR=1 all unit lint
	$(MAKE) integration
	$(MAKE) sanitize

# A second build with ASan+UBSan, and valgrind on the release build, over
# the integration tests that exercise the most code paths.
sanitize:
	$(MAKE) clean
	$(MAKE) WERROR=1 SANITIZE=address,undefined all unit
	PGLEADER_SANITIZED=1 $(PYTHON) -m pytest -q tests/integration -m 'not slow' $(PYTEST_ARGS)
	$(MAKE) clean
	$(MAKE) WERROR=1 all
	PGLEADER_WRAPPER=valgrind $(PYTHON) -m pytest -q tests/integration -m valgrind $(PYTEST_ARGS)

# pkg-config's flags are read when make parses this file: build in a fresh
# make once deps has installed what they come from.
demo: deps
	$(MAKE) pgleader
	tests/demo.sh

bench: deps
	$(MAKE) pgleader
	$(PYTHON) tests/bench.py $(BENCH_ARGS)

install: pgleader
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(SYSCONFDIR)/pgleader \
		$(DESTDIR)$(UNITDIR)
	install -m 755 pgleader $(DESTDIR)$(BINDIR)/pgleader
	install -m 644 man/pgleader.1 $(DESTDIR)$(MANDIR)/man1/pgleader.1
	install -m 644 man/pgleader.conf.5 $(DESTDIR)$(MANDIR)/man5/pgleader.conf.5
	install -m 644 conf/pgleader.conf $(DESTDIR)$(SYSCONFDIR)/pgleader/pgleader.conf.example
	sed 's|/usr/bin/pgleader|$(BINDIR)/pgleader|g' systemd/pgleader.service \
		> $(DESTDIR)$(UNITDIR)/pgleader.service
	sed 's|/usr/bin/pgleader|$(BINDIR)/pgleader|g' systemd/pgleader@.service \
		> $(DESTDIR)$(UNITDIR)/pgleader@.service
	chmod 644 $(DESTDIR)$(UNITDIR)/pgleader.service $(DESTDIR)$(UNITDIR)/pgleader@.service

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/pgleader $(DESTDIR)$(MANDIR)/man1/pgleader.1 \
		$(DESTDIR)$(MANDIR)/man5/pgleader.conf.5 \
		$(DESTDIR)$(UNITDIR)/pgleader.service $(DESTDIR)$(UNITDIR)/pgleader@.service

clean:
	rm -f pgleader src/*.o $(UNIT_TESTS) tests/clockshift.so src/*.gcda src/*.gcno tests/unit/*.gcda tests/unit/*.gcno
