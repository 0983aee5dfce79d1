# sbx — build, test, install. Every cmd/<prog>.c is a program linked against lib/libsbx.a.
# Programs in STATIC_PROGS are linked statically: they run inside sandboxes whose root
# filesystem may have no matching libc.

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBEXECDIR ?= $(PREFIX)/libexec/sbx
MANDIR ?= $(PREFIX)/share/man
DESTDIR ?=

CC ?= cc
PKG_CONFIG ?= pkg-config
PKGS := libcurl json-c libwebsockets libarchive zlib openssl yaml-0.1 libedit libpcre2-8 libmicrohttpd libseccomp
WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 -Werror
OPT ?= -O2 -g
SAN ?=
# Every folder of lib/ is on the quote-include path, so `#include "backend.h"` reads the same from
# cmd/, tests/ and any folder (-iquote: a <err.h> still means the system's).
LIB_DIRS := $(patsubst %/,%,$(sort $(dir $(wildcard lib/*.h lib/*/*.h))))
INC := $(LIB_DIRS:%=-iquote %)
CFLAGS_ALL := -std=c11 -D_GNU_SOURCE -fPIC $(OPT) $(WARN) $(SAN) $(INC) \
	$(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null) $(CFLAGS)
LDLIBS_ALL := $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null) -lpthread -ldl -lresolv $(LDLIBS)
LDFLAGS_ALL := -Wl,--as-needed $(SAN) $(LDFLAGS)

# Output tree; `make asan` uses another so the two builds never mix.
B ?= build
BIN ?= bin

STATIC_PROGS := sbx-init geminicli-toolbox
PROGS := $(filter-out cli,$(basename $(notdir $(wildcard cmd/*.c))))
DYN_PROGS := $(filter-out $(STATIC_PROGS),$(PROGS))
# lib/ is one folder per layer (lib/README.md names them, lowest first); a file's folder alone
# decides where it is built. The Kubernetes backend, lib/kube/, is a plugin, sbx-kube.so, loaded
# only when -backend kubernetes is used: its libraries (libwebsockets, OpenSSL, libyaml; libcurl
# is opened by lib/util/curlso.c only when an API request is made) cost milliseconds to load,
# and the local fast path must not pay for them. Every other folder goes into libsbx.a.
KUBE_SRC := $(wildcard lib/kube/*.c)
LIB_SRC := $(filter-out $(KUBE_SRC),$(wildcard lib/*/*.c))
LIB_OBJ := $(LIB_SRC:%.c=$(B)/%.o)
KUBE_OBJ := $(KUBE_SRC:%.c=$(B)/%.o)
# lib_src NAME...: the sources lib/*/NAME.c, wherever their folder is.
lib_src = $(foreach n,$(1),$(wildcard lib/*/$(n).c))
CLI_OBJ := $(B)/cmd/cli.o
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(B)/tests/%)
# What tests/attacks.bats runs inside sandboxes: static, no sanitizer, any root filesystem.
# Like the unit tests, built only where tests/ is (an image's build copies no tests).
PROBE := $(if $(wildcard tests/probe.c),$(B)/tests/sbx-probe)

# Libraries the static programs need (their static archives ship in the -dev packages).
sbx-init_STATIC_LIBS := -lseccomp
sbx-init_LIBSRC := $(call lib_src,fsutil err cgroup homedisk reslimit local_bwrap idmap rootlayer child exitcode timeutil xalloc)
# lib/local/local_bwrap.c is built twice: its host half into libsbx, its sandbox half (what
# sbx-init carries out of the plan) into sbx-init.
$(patsubst %.c,$(B)/static/%.o,$(call lib_src,local_bwrap)): STATIC_DEFS := -DSBX_INIT
geminicli-toolbox_STATIC_LIBS := -ljson-c -lpcre2-8 -lm
geminicli-toolbox_LIBSRC := $(call lib_src,utf8 gemini_path xalloc base64)

.PHONY: all check test run asan install uninstall clean deps bench fuzz images lint
all: $(PROGS:%=$(BIN)/%) $(BIN)/sbx-kube.so $(UNIT_BIN) $(PROBE)

# Header dependencies are computed by the compiler (-MMD -MP): an edit rebuilds exactly the
# objects that include what changed, headers under cmd/*/ included.
DEPFLAGS = -MMD -MP

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $(DEPFLAGS) -c -o $@ $<

$(B)/libsbx.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(B)/libsbxkube.a: $(KUBE_OBJ)
	@rm -f $@
	ar rcs $@ $^

# The plugin carries its own copy of the lib/ code it uses, with every symbol but its ops
# table hidden, so it cannot clash with the program that loads it.
$(BIN)/sbx-kube.so: $(B)/libsbxkube.a $(B)/libsbx.a
	@mkdir -p $(BIN)
	$(CC) -shared $(LDFLAGS_ALL) -Wl,--whole-archive $(B)/libsbxkube.a -Wl,--no-whole-archive \
		$(B)/libsbx.a -Wl,--exclude-libs,libsbx.a -o $@ $(LDLIBS_ALL)

# Objects for static programs are built without sanitizers (they cannot link them statically).
$(B)/static/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(DEPFLAGS) -std=c11 -D_GNU_SOURCE $(STATIC_DEFS) -O2 -g $(WARN) $(INC) $(shell $(PKG_CONFIG) --cflags json-c libpcre2-8) -c -o $@ $<

define dyn_prog
$(BIN)/$(1): $(B)/cmd/$(1).o $(CLI_OBJ) $(B)/libsbx.a
	@mkdir -p $(BIN)
	$$(CC) $$(LDFLAGS_ALL) -o $$@ $$^ $$(LDLIBS_ALL)
endef
$(foreach p,$(DYN_PROGS),$(eval $(call dyn_prog,$(p))))

define static_prog
$(BIN)/$(1): $(B)/static/cmd/$(1).o $(patsubst %.c,$(B)/static/%.o,$(wildcard cmd/$(1)/*.c) $($(1)_LIBSRC))
	@mkdir -p $(BIN)
	$$(CC) -static -o $$@ $$^ $$($(1)_STATIC_LIBS)
endef
$(foreach p,$(filter $(STATIC_PROGS),$(PROGS)),$(eval $(call static_prog,$(p))))

$(B)/tests/sbx-probe: tests/probe.c
	@mkdir -p $(dir $@)
	$(CC) $(DEPFLAGS) -std=c11 -D_GNU_SOURCE -O2 -g $(WARN) -static -o $@ $<

$(B)/tests/%: tests/unit/%.c tests/unit/tap.h $(B)/libsbx.a $(B)/libsbxkube.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $(DEPFLAGS) $(LDFLAGS_ALL) -o $@ $< $(B)/libsbxkube.a $(B)/libsbx.a $(LDLIBS_ALL)

# Only the compiler's files: build/images holds unpacked root filesystems (etc/rc2.d, …).
-include $(shell find $(B) -path $(B)/images -prune -o -type f -name '*.d' -print 2>/dev/null)

deps:
	@scripts/install-deps

# The README's two commands. ARGS go to agent-loop: make run ARGS='-session x -ttl 10s'.
run: deps all
	@scripts/run-agent $(ARGS)

check: deps all
	@SBX_BIN=$(CURDIR)/$(BIN) SBX_UNIT=$(CURDIR)/$(B)/tests tests/run

test: check

# ASan+UBSan build of everything, then the whole suite against it.
asan: deps all
	@$(MAKE) --no-print-directory B=build-asan BIN=build-asan/bin OPT="-O1 -g -fno-omit-frame-pointer" \
		SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined" all
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=99 UBSAN_OPTIONS=print_stacktrace=1 \
		SBX_BIN=$(CURDIR)/build-asan/bin SBX_UNIT=$(CURDIR)/build-asan/tests SBX_SANITIZED=1 tests/run

# lib/'s layering (lib/README.md, Folders): no folder includes from one above it, and no two
# objects call each other (read from their symbols).
lint: $(B)/libsbx.a $(B)/libsbxkube.a
	@scripts/check-layers -o $(B)

# libFuzzer harnesses (tests/fuzz/fuzz_*.c), each for FUZZ_SECONDS (default 60).
fuzz:
	@tests/fuzz/run

bench: all
	@SBX_BIN=$(CURDIR)/$(BIN) tests/bench/run

# Container images: every images/*/Dockerfile built with buildah (no Docker engine) and
# exported as an OCI archive build/images/<name>.tar; see scripts/build-images.
images:
	@scripts/build-images

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBEXECDIR) $(DESTDIR)$(MANDIR)/man1
	install -m 0755 $(filter-out $(BIN)/sbx-init $(BIN)/sbx-proxy,$(PROGS:%=$(BIN)/%)) $(DESTDIR)$(BINDIR)/
	install -m 0755 $(BIN)/sbx-init $(BIN)/sbx-proxy $(BIN)/sbx-kube.so $(DESTDIR)$(LIBEXECDIR)/
	install -m 0644 $(wildcard man/man1/*.1) $(DESTDIR)$(MANDIR)/man1/

uninstall:
	rm -f $(PROGS:%=$(DESTDIR)$(BINDIR)/%) $(DESTDIR)$(LIBEXECDIR)/sbx-init $(DESTDIR)$(LIBEXECDIR)/sbx-proxy $(DESTDIR)$(LIBEXECDIR)/sbx-kube.so
	rm -f $(patsubst man/man1/%,$(DESTDIR)$(MANDIR)/man1/%,$(wildcard man/man1/*.1))

clean:
	rm -rf build build-asan build-fuzz bin
