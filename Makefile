# Concurrency Patterns in C - one entry point for building, running, testing,
# grading and documenting the kit. `make help` lists the targets.
#
#   make run [CH=NN] [IMPL=exercises]   build and run the chapter programs
#   make test                           every test against the reference solutions
#   make grade [CH=NN] [SUBMISSION=dir] score the exercises (or a student's tree)

.DEFAULT_GOAL := all
SHELL := /bin/bash
comma := ,

# ---- Knobs -------------------------------------------------------------------
ifeq ($(origin CC),default)
CC := gcc
endif
CFLAGS  ?= -O2 -g
WERROR  ?= -Werror
CH      ?=
# The full kit builds the reference solutions by default; the student kit
# (`make dist-student`: no solutions/) builds the student's exercises.
HAVE_SOLUTIONS := $(if $(wildcard solutions/*/),yes)
IMPL    ?= $(if $(HAVE_SOLUTIONS),solutions,exercises)
# EARLIER=mine links your own earlier chapters into a chapter's programs and
# tests instead of the reference (see used_objs below).
EARLIER ?= reference
SAN     ?=
TIMEOUT ?= 30
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)

# ---- Chapters ------------------------------------------------------------------
# Each chapter says what it is made of in chapters/NN-name/build.mk: the
# files students implement (chNN_impl), the earlier chapters it links
# (chNN_uses), its program (chNN_main) and tests (chNN_tests); optionally
# kit-written sources in chapters/NN-name/ that the program and the tests
# both link (chNN_support), extra sources in tests/NN-name/ that every test
# of the chapter links (chNN_test_support), functions its tests wrap at link
# time (chNN_test_wraps), libraries (chNN_libs), how its tests are judged
# (chNN_judged: yes, or processes with chNN_one_process, chNN_judge and
# chNN_subject - chapter 07's), and a
# service the chapter needs (chNN_needs: `make run` skips it unless CH says so).
CHAPTER_DIRS := $(patsubst chapters/%/build.mk,%,$(sort $(wildcard chapters/*/build.mk)))
include $(addprefix chapters/,$(addsuffix /build.mk,$(CHAPTER_DIRS)))

# $(call number,03-thread-pool) is 03; $(call pad2,3) is 03 (and 03 stays 03).
number = $(firstword $(subst -, ,$(1)))
pad2   = $(if $(filter 0 1 2 3 4 5 6 7 8 9,$(1)),0$(1),$(1))
# CH=1, CH=01, CH="01 02" or CH=01-monitor-queue select chapters; empty selects all.
# The words of CH, each also as a two-digit number:
ch_words = $(CH) $(foreach n,$(CH),$(call pad2,$(n)))
# A chapter folder $(1) is selected when CH names its folder or its number:
is_selected = $(filter $(1) $(call number,$(1)),$(ch_words))
# A chapter is handed out with its exercise. A student kit of some chapters
# (make dist-student CHAPTERS=...) also has, of a chapter they build on but
# that is not handed out, only the header and build.mk: the compiled
# reference is linked, and the chapter itself is never built, run or graded.
HANDED_OUT := $(foreach c,$(CHAPTER_DIRS),$(if $(wildcard exercises/$(c)/),$(c)))
SELECTED := $(if $(strip $(CH)),$(foreach c,$(HANDED_OUT),$(if $(call is_selected,$(c)),$(c))),$(HANDED_OUT))
ifneq ($(strip $(CH)),)
ifeq ($(strip $(SELECTED)),)
$(error CH=$(CH) matches no chapter; chapters are: $(HANDED_OUT))
endif
endif
# Chapters that need a service (chNN_needs) run in `make run` only when asked for by CH.
RUN_SELECTED := $(if $(strip $(CH)),$(SELECTED),$(foreach c,$(SELECTED),$(if $(ch$(call number,$(c))_needs),,$(c))))
# The rest (build, test, grade, mutants) leave such a chapter out, when CH does
# not name it, if `tools/bootstrap --have NEED` says its service is missing: the
# other chapters never need it. Deferred (=), so that `make test` looks again
# after `deps` may have installed it.
SKIPPED = $(if $(strip $(CH)),,$(foreach c,$(SELECTED),$(if $(ch$(call number,$(c))_needs),$(if $(shell tools/bootstrap --have $(ch$(call number,$(c))_needs) && echo yes),,$(c)))))
ACTIVE = $(filter-out $(SKIPPED),$(SELECTED))
SKIP_NOTE = $(foreach c,$(SKIPPED),echo "($(c) left out: it needs $(ch$(call number,$(c))_needs); tools/bootstrap installs it)";)

# ---- Where things are built ---------------------------------------------------------
# IMPL picks the implementation: solutions (build/), exercises (build/exercises/)
# or any folder laid out like them. SAN=tsan|asan builds a sanitizer variant
# below it. Everything lands in $(OUT).
out_root = $(strip $(if $(filter solutions,$(1)),build, \
                $(if $(filter exercises,$(1)),build/exercises, \
                build/impl/$(subst /,_,$(patsubst /%,%,$(1)))))$(if $(filter mine,$(EARLIER)),/earlier-mine))
# (EARLIER=mine links other objects into the same programs: they are built apart.)
OUT_ROOT := $(call out_root,$(IMPL))
OUT ?= $(OUT_ROOT)$(if $(SAN),/$(SAN))
# Objects that do not depend on the implementation (lib/, the tests, the
# harness, the programs' own files) are compiled once, here, and shared by
# every implementation's build: grading a class compiles only students' files.
COMMON := build/common$(if $(SAN),-$(SAN))

# Objects remember how they were compiled: a change of CC, CFLAGS or SAN
# rewrites this stamp, and everything that depends on it is rebuilt. Its rule
# runs on every build (FORCE) but writes the file only when the flags differ,
# so an unchanged stamp keeps its age and rebuilds nothing.
BUILD_FLAGS = $(CC) $(CFLAGS) $(SAN_CFLAGS_$(SAN)) $(TEST_CFLAGS) $(INSTRUMENT) $(LIBC_CHECKED)
FLAGS_STAMP = $(COMMON)/.build-flags
$(FLAGS_STAMP): FORCE
	@mkdir -p $(@D)
	@echo '$(BUILD_FLAGS)' | cmp -s - $@ 2>/dev/null || echo '$(BUILD_FLAGS)' > $@
.PHONY: FORCE

SAN_CFLAGS_tsan := -fsanitize=thread
# SAN=debug is no sanitizer: it is the build `make debug` runs, unoptimised,
# so that gdb shows every variable and steps one line at a time.
SAN_CFLAGS_debug := -O0
SAN_CFLAGS_asan := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
WARNINGS   := -std=c11 -Wall -Wextra -Wpedantic $(WERROR)
# Every program and test program: no executable stack, and code in segments
# of its own, apart from read-only data (writable data is never executable).
# Full RELRO (-z relro -z now): every library call is bound before main, and
# the table of their addresses is then read-only - code under test cannot
# point cmocka's _fail (or any call) somewhere else.
HARDENED_LDFLAGS := -Wl,-z,noexecstack -Wl,-z,separate-code -Wl,-z,relro -Wl,-z,now
KIT_CFLAGS  = $(WARNINGS) $(CFLAGS) $(SAN_CFLAGS_$(SAN)) -MMD -MP
# chNN_cflags: what a chapter's libraries need to compile (say -isystem DIR).
INCLUDES   := -Ilib/runtime -Ilib/program $(addprefix -Ichapters/,$(CHAPTER_DIRS)) \
              $(foreach c,$(CHAPTER_DIRS),$(ch$(call number,$(c))_cflags))
LDLIBS     := -lpthread
CMOCKA_CFLAGS = $(shell pkg-config --cflags cmocka 2>/dev/null)
CMOCKA_LIBS   = $(or $(shell pkg-config --libs cmocka 2>/dev/null),-lcmocka)
# Test programs see every condition wait and allocation of the code under
# test (grader/subject/kit_wrap.c): waiter counts, spurious wake-ups, leak checks.
# The gates' and latches' own waits are wrapped too, to be left out of it all;
# and cmocka's checks, to say in words what failed and from which line of a test.
# The explorer (grader/explorer/kit_sched.c), which runs the threads one at a
# time on virtual time, also sees joins, destroys, yields, sleeps and clocks.
# Its threads are contexts on one OS thread (kit_sched_context.c): what the C
# library keeps per thread is kept per context (kit_sched_thread.c).
CONTEXT_WRAPS := pthread_self pthread_equal pthread_setname_np pthread_getname_np pthread_key_create \
               pthread_key_delete pthread_getspecific pthread_setspecific __pthread_register_cancel \
               __pthread_unregister_cancel __pthread_unwind_next pthread_tryjoin_np pthread_timedjoin_np \
               pthread_cancel pthread_rwlock_rdlock pthread_rwlock_wrlock pthread_rwlock_timedrdlock \
               pthread_rwlock_timedwrlock pthread_spin_lock pthread_barrier_wait
SCHED_WRAPS := pthread_join pthread_detach pthread_exit pthread_mutex_trylock pthread_mutex_timedlock \
               pthread_mutex_destroy pthread_cond_destroy pthread_cond_clockwait \
               sched_yield nanosleep clock_nanosleep usleep sleep clock_gettime timespec_get gettimeofday time \
               sem_wait sem_timedwait sem_clockwait sem_trywait sem_post sem_getvalue sem_destroy \
               $(CONTEXT_WRAPS)
TEST_WRAPS := $(addprefix -Wl$(comma)--wrap=,pthread_cond_wait pthread_cond_timedwait pthread_cond_signal \
                pthread_cond_broadcast pthread_mutex_lock pthread_mutex_unlock pthread_create \
                malloc calloc realloc free strdup strndup aligned_alloc posix_memalign \
                asprintf vasprintf __asprintf_chk __vasprintf_chk \
                kit_gate_wait kit_gate_await_arrivals kit_gate_destroy kit_latch_wait kit_latch_destroy \
                _fail _assert_in_range print_error \
                $(SCHED_WRAPS))

# lib/ in two layers: the runtime the solutions link (it never prints but
# through its log, and never exits), and what the programs and tests add on
# top of it (command lines, gates, randomness, timelines). Each layer
# includes only itself and the layers below (tools/check-layers).
RUNTIME_SRCS := lib/runtime/kit_errno.c lib/runtime/kit_log.c lib/runtime/kit_map.c \
                lib/runtime/kit_thread.c lib/runtime/kit_time.c lib/runtime/kit_trace.c
PROGRAM_SUPPORT_SRCS := lib/program/kit_cli.c lib/program/kit_gate.c lib/program/kit_timeline.c
LIB_SRCS := $(RUNTIME_SRCS) $(PROGRAM_SUPPORT_SRCS)
SUPPORT_SRCS := grader/harness/kit_test.c grader/subject/kit_wrap.c grader/subject/kit_stacks.c grader/subject/kit_misuse.c \
                grader/explorer/kit_sched.c \
                grader/explorer/kit_sched_memory.c grader/explorer/kit_sched_tsan.c grader/explorer/kit_sched_libc.c \
                grader/explorer/kit_sched_printf.c grader/explorer/kit_sched_scan.c grader/explorer/kit_sched_parse.c \
                grader/explorer/kit_sched_explore.c grader/explorer/kit_sched_dpor.c grader/explorer/kit_sched_report.c \
                grader/explorer/kit_sched_svg.c grader/explorer/kit_scenario.c grader/explorer/kit_scenario_check.c \
                grader/explorer/kit_scenario_run.c grader/explorer/kit_sched_lockorder.c \
                grader/explorer/kit_sched_context.c grader/explorer/kit_sched_thread.c \
                grader/explorer/kit_sched_changes.c grader/explorer/kit_sched_split.c grader/explorer/kit_sched_recheck.c \
                grader/explorer/kit_text.c
GRADER_SRCS := grader/runner/grader_main.c grader/runner/grader_proc.c \
               grader/runner/grader_judge.c grader/runner/grader_tests.c \
               grader/runner/grader_report.c grader/runner/grader_stacks.c \
               grader/runner/grader_feedback.c grader/runner/grader_drawing.c \
               grader/confine/confine.c
GRADER := build/tools/kit-grade
# The confinement and the admission check every submission goes through (grading).
CONFINE_SRCS := grader/confine/confine.c grader/confine/confine_main.c
ADMIT_SRCS := grader/admission/admission_main.c grader/admission/admission_elf.c grader/admission/admission_source.c \
             grader/admission/admission_object.c grader/admission/admission_stage.c \
             grader/admission/admission_code.c grader/admission/admission_binary.c
CONFINE := build/tools/kit-confine
ADMIT := build/tools/kit-admit

KITLIB := $(COMMON)/libkit.a
# (A ThreadSanitizer build has the sanitizer's runtime: not the kit's own.)
SUPPORT_OBJS := $(patsubst %.c,$(COMMON)/%.o,$(filter-out $(if $(filter tsan,$(SAN)),grader/explorer/kit_sched_tsan.c),$(SUPPORT_SRCS)))

# Tests link the implementation instrumented (TEST_OBJ=sched): compiled with
# ThreadSanitizer's instrumentation but linked without its runtime, so that
# every load, store and atomic of the code under test reaches the kit's
# scheduler (grader/explorer/kit_sched_memory.c) - a switch point, and its data
# race detector. Sanitizer builds link it plain, under the sanitizer's own
# runtime; the programs and the benchmark link it plain, always.
TEST_OBJ = $(if $(filter tsan asan,$(SAN)),impl,sched)
# The C library's memory and string functions are not instrumented: in those
# objects, each call of one of LIBC_ACCESSES is renamed to the kit's
# kit_libc_NAME (grader/explorer/kit_sched_libc.c; kit_sched_printf.c for the printf
# family that prints into memory, kit_sched_scan.c for sscanf, kit_sched_parse.c
# for tokens, numbers and qsort), which reports what it reads
# and writes, then calls the library. The compiler must not expand them
# itself (-fno-builtin-NAME: gcc copies a memcpy of a constant size inline,
# unseen); clang's calls for a struct copy are renamed with the rest. (Not
# strdup nor strndup: the allocation wrappers name their caller as the place
# a leaked block was allocated at, and that must stay the code's own line.)
LIBC_ACCESSES := memcpy mempcpy memmove memccpy memset explicit_bzero memcmp memchr memrchr memmem \
                 strlen strnlen strcmp strncmp strcasecmp strncasecmp strchr strchrnul strrchr strstr \
                 strspn strcspn strpbrk strtok strtok_r strsep \
                 strcpy stpcpy strncpy stpncpy strcat strncat snprintf vsnprintf sprintf vsprintf \
                 sscanf vsscanf strtol strtoul strtoll strtoull strtoimax strtoumax strtod strtof strtold \
                 atoi atol atoll qsort
# The names the C library's headers call some of those by (sscanf is
# __isoc99_sscanf under -std=c11; C23's under glibc 2.38 and later), and the
# checked forms _FORTIFY_SOURCE calls: renamed too (kit_sched_scan.c,
# kit_sched_parse.c), never builtins.
LIBC_CHECKED := __memcpy_chk __mempcpy_chk __memmove_chk __memset_chk __strcpy_chk __stpcpy_chk \
                __strncpy_chk __strcat_chk __snprintf_chk __vsnprintf_chk __sprintf_chk __vsprintf_chk \
                __isoc99_sscanf __isoc99_vsscanf __isoc23_sscanf __isoc23_vsscanf __isoc23_strtol __isoc23_strtoul \
                __isoc23_strtoll __isoc23_strtoull __isoc23_strtoimax __isoc23_strtoumax
# -fsanitize-coverage=trace-pc: each block of code calls __sanitizer_cov_trace_pc
# (kit_sched_tsan.c), so a time-out's path names every line it ran.
INSTRUMENT := -fsanitize=thread -fsanitize-coverage=trace-pc $(addprefix -fno-builtin-,$(LIBC_ACCESSES))
# $(call redirect_accesses,object): rename those calls in an instrumented object.
redirect_accesses = objcopy $(foreach f,$(LIBC_ACCESSES) $(LIBC_CHECKED),--redefine-sym $(f)=kit_libc_$(f)) $(1)
# Objects of chapter $(1)'s implementation, from $(IMPL), as $(2) (impl, the
# default, or sched) links them.
impl_objs = $(patsubst %.c,$(OUT)/obj/$(or $(2),impl)/$(1)/%.o,$(ch$(call number,$(1))_impl))
# An earlier chapter $(1) that a chapter builds on is linked from the
# reference, so that one unfinished chapter does not break the next: compiled
# from solutions/ in the full kit, or taken already compiled from reference/
# in the student kit (`make dist-student` ships the objects, not the source).
# EARLIER=mine, or a kit that has neither, links the implementation's own
# (EARLIER=mine: of the chapters it has; one not handed out is the reference's).
reference_dir = reference/$(if $(filter sched,$(1)),sched,$(if $(filter tsan asan,$(SAN)),$(SAN),plain))
ref_objs = $(patsubst %.c,$(2)/$(1)/%.o,$(ch$(call number,$(1))_impl))
used_objs = $(strip \
  $(if $(or $(filter solutions,$(IMPL)),$(and $(filter mine,$(EARLIER)),$(wildcard $(IMPL)/$(1)))), \
    $(call impl_objs,$(1),$(2)), \
  $(if $(wildcard solutions/$(1)),$(call ref_objs,$(1),$(COMMON)/ref$(if $(filter sched,$(2)),-sched)), \
  $(if $(wildcard $(call reference_dir,$(2))/$(1)),$(call ref_objs,$(1),$(call reference_dir,$(2))), \
  $(call impl_objs,$(1),$(2))))))
support_objs = $(patsubst %.c,$(COMMON)/chapters/$(1)/%.o,$(ch$(call number,$(1))_support))
# The chapters some later chapter builds on, and their objects for IMPL:
# `make dist-student` ships these, compiled from the reference, in reference/.
USED_CHAPTERS = $(sort $(foreach c,$(CHAPTER_DIRS),$(ch$(call number,$(c))_uses)))
USED_IMPL_OBJS = $(foreach c,$(USED_CHAPTERS),$(call impl_objs,$(c),$(KIND)))
# The reference objects of those chapters, as a submission's build links
# them: built once, before builds that run side by side (make mutants) would
# each make them at the same time.
.PHONY: earlier-references
earlier-references: $(if $(wildcard solutions),$(foreach c,$(USED_CHAPTERS),$(call ref_objs,$(c),$(COMMON)/ref) $(call ref_objs,$(c),$(COMMON)/ref-sched)))
# $(call chapter_objs,chapter,kind): what a program (kind impl) or a test (kind TEST_OBJ) links.
chapter_objs = $(call impl_objs,$(1),$(2)) $(foreach d,$(ch$(call number,$(1))_uses),$(call used_objs,$(d),$(2))) \
               $(call support_objs,$(1)) $(if $(filter sched,$(2)),$(WATCHED_LIB_OBJS))
# lib/ code whose memory is a chapter's shared state (the keyed executor's
# map of lanes): linked into the tests instrumented, ahead of libkit.a's
# plain copy, so the explorer sees its loads and stores as the code under
# test's - a lookup made without the mutex is a race, a check made in one
# critical section and acted on in another is told, each at the student's
# call (kit_sched_report.c names lib/ lines as the kit's).
WATCHED_LIB_SRCS := lib/runtime/kit_map.c
WATCHED_LIB_OBJS := $(patsubst lib/%.c,$(COMMON)/watched/%.o,$(WATCHED_LIB_SRCS))
test_support_objs = $(patsubst %.c,$(COMMON)/tests/$(1)/%.o,$(ch$(call number,$(1))_test_support))
# A chapter's own test sources for one way of linking its tests (chNN_one_process,
# chNN_judge, chNN_subject: chapter 07's, judged by processes).
chapter_test_objs = $(patsubst %.c,$(COMMON)/tests/$(1)/%.o,$(ch$(call number,$(1))_$(2)))
# Linked just before the code under test in every test program, one process
# or subject: a replay token counts its racing places from it (kit_anchor.c).
CODE_ANCHOR_SRC := grader/explorer/kit_anchor.c
CODE_ANCHOR = $(patsubst %.c,$(COMMON)/%.o,$(CODE_ANCHOR_SRC))

# lib/'s own tests (tests/kit/): run by `make test`, scored 0 - not student code.
KIT_TESTS := test_kit test_kit_map test_explore test_schedule test_misuse test_memaccess
KIT_TEST_BINS := $(addprefix $(OUT)/tests/kit/,$(KIT_TESTS))
# Code under test of the kit's own tests, built as a submission's is
# (instrumented, its library calls renamed: TEST_OBJ sched), whose copies the
# C library makes - for test_memaccess and for make feedback.
KIT_TEST_CODE := tests/kit/memaccess_code.c tests/feedback/buggy.c tests/feedback/buggy_copy.c
kit_test_code = $(patsubst tests/%.c,$(COMMON)/tests-code/%.o,$(1))
# Fault injection (tests/faults/, the rubric's chapter `faults`): run by `make
# test`, scored 0 - it holds the reference solutions to the reliability bar.
# tests/faults/test_faults.c fails the allocations and thread creations of
# chapters 03, 04, 05, 06 and 08; invariants are checked on recorded traces of
# chapters 01, 03 and 06 (tests/traces/), likewise. Both link FAULT_CHAPTERS:
# those chapters and the queue of chapter 02 that 03's pool runs on.
FAULT_CHAPTERS := 01-monitor-queue 02-blocking-queue 03-thread-pool 04-starvation 05-master-worker \
                  06-keyed-executor 08-rwlock
SOLUTION_LINKED_TESTS := faults/test_faults traces/test_traces
# A chapter's own fault injection is one file, tests/faults/test_faults_NN.c,
# with its rubric lines under `faults`: a program of its own, linked with
# chapter NN and the chapters it uses (tools/new-chapter writes a first one).
CHAPTER_FAULT_TESTS := $(patsubst tests/%.c,%,$(wildcard tests/faults/test_faults_[0-9][0-9].c))
fault_test_chapter = $(firstword $(foreach c,$(CHAPTER_DIRS),$(if $(filter faults/test_faults_$(call number,$(c)),$(1)),$(c))))
FAULT_TEST_BINS := $(addprefix $(OUT)/tests/,$(SOLUTION_LINKED_TESTS) $(CHAPTER_FAULT_TESTS))

PROGRAMS  := $(foreach c,$(ACTIVE),$(OUT)/bin/$(ch$(call number,$(c))_program))
RUN_PROGRAMS := $(foreach c,$(RUN_SELECTED),$(OUT)/bin/$(ch$(call number,$(c))_program))
TEST_BINS := $(foreach c,$(ACTIVE),$(addprefix $(OUT)/tests/$(c)/,$(ch$(call number,$(c))_tests)))

# ---- Compiling and linking ------------------------------------------------------------
# A quiet build prints one line a file (`CC solutions/01-monitor-queue/msgq.c`);
# V=1 prints every command in full.
# (make -s prints nothing at all.)
V ?=
silent := $(findstring s,$(firstword -$(MAKEFLAGS)))
say = $(if $(filter 1,$(V)),,@$(if $(silent),,printf '  %-4s %s\n' '$(1)' '$(2)';))

$(COMMON)/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(@D)
	$(call say,CC,$<)$(CC) $(KIT_CFLAGS) $(INCLUDES) -c $< -o $@

# The tests, and only they, see the harness's headers. Their calls keep
# their frames (no tail calls), so that a stack, or a step of a schedule,
# names the test's line that made the call, not the caller's.
TEST_CFLAGS := -fno-optimize-sibling-calls
# The grading engine's headers that tests are written against: the harness
# (kit_test.h) and the explorer (kit_sched.h, kit_scenario.h).
HARNESS_INCLUDES := -Igrader/harness -Igrader/explorer -Igrader/subject -Igrader/judge
$(COMMON)/tests/%.o: tests/%.c $(FLAGS_STAMP)
	@mkdir -p $(@D)
	$(call say,CC,$<)$(CC) $(KIT_CFLAGS) $(TEST_CFLAGS) $(INCLUDES) $(HARNESS_INCLUDES) $(CMOCKA_CFLAGS) -c $< -o $@
# The engine's runtime that test programs link (grader/: the harness, the
# explorer, the wrappers the code under test runs under): compiled as the tests are.
$(COMMON)/grader/%.o: grader/%.c $(FLAGS_STAMP)
	@mkdir -p $(@D)
	$(call say,CC,$<)$(CC) $(KIT_CFLAGS) $(TEST_CFLAGS) $(INCLUDES) $(HARNESS_INCLUDES) $(CMOCKA_CFLAGS) -c $< -o $@
# Under ThreadSanitizer the explorer's own memory is not watched: it runs on
# one thread at a time (kit_sched_internal.h), and what its accesses cost
# there was most of a schedule's time. The code under test still is, and
# each thread of a schedule is a fiber of its own to it (KIT_SCHED_TSAN_FIBERS:
# the compiler no longer says the build is ThreadSanitizer's).
$(COMMON)/grader/explorer/%.o: SAN_CFLAGS_tsan := -fsanitize=thread -fno-sanitize=thread -DKIT_SCHED_TSAN_FIBERS=1

ifeq ($(CONFINED),)
# A submission of .c files alone still finds the private header its chapter's
# exercise ships (chapter 05's mw_internal.h): the kit's exercises/ folder is
# searched after the submission's own, whose copy always wins.
$(OUT)/obj/impl/%.o: $(IMPL)/%.c $(FLAGS_STAMP)
	@mkdir -p $(@D)
	$(call say,CC,$<)$(CC) $(KIT_CFLAGS) $(INCLUDES) -iquote exercises/$(dir $*) -c $< -o $@
$(OUT)/obj/sched/%.o: $(IMPL)/%.c $(FLAGS_STAMP)
	@mkdir -p $(@D)
	$(call say,CC,$< (instrumented))$(CC) $(KIT_CFLAGS) $(INSTRUMENT) $(INCLUDES) -iquote exercises/$(dir $*) -c $< -o $@ && \
	  $(call redirect_accesses,$@)
else
# A submission (CONFINED=1: make grade, and make debug or explore of a
# SUBMISSION) is built from its stage (STAGE: kit-admit stage copied its
# files there), shown at IMPL inside the confinement so that every message
# names the student's own path. Each file is preprocessed and compiled
# confined, each in a work folder of its own, and its object is kept only if
# admission admits it (grader/admission/admission.h): what it defines, what it
# calls, its sections, no asm. No dependency files: nothing a confined step
# writes is ever read by make.
CONFINED_DEPS = $(FLAGS_STAMP) $(CONFINE) $(ADMIT) $(patsubst %.c,$(COMMON)/%.o,$(RUNTIME_SRCS))
$(OUT)/obj/impl/%.o: $(STAGE)/%.c $(CONFINED_DEPS)
	@mkdir -p $(@D)
	$(call say,CC,$(IMPL)/$*.c)$(call confined_compile,$*,$@,,$(or $(SAN),plain))
$(OUT)/obj/sched/%.o: $(STAGE)/%.c $(CONFINED_DEPS)
	@mkdir -p $(@D)
	$(call say,CC,$(IMPL)/$*.c (instrumented))$(call confined_compile,$*,$@,$(INSTRUMENT),sched)
endif

# An earlier chapter's reference, linked into a later chapter's programs and
# tests: compiled once for every implementation, without its debugging
# information - no line of solutions/ shows in a student's stack, and the
# compiled reference the student kit and an autograder ship is no answer key.
$(COMMON)/ref/%.o: solutions/%.c $(FLAGS_STAMP)
	@mkdir -p $(@D)
	$(call say,CC,$<)$(CC) $(KIT_CFLAGS) $(INCLUDES) -c $< -o $@ && objcopy --strip-debug $@
$(COMMON)/ref-sched/%.o: solutions/%.c $(FLAGS_STAMP)
	@mkdir -p $(@D)
	$(call say,CC,$< (instrumented))$(CC) $(KIT_CFLAGS) $(INSTRUMENT) $(INCLUDES) -c $< -o $@ && \
	  $(call redirect_accesses,--strip-debug $@)

# (Its own loads and stores only: not each block's call, which follows a
# time-out's path through the student's lines - the library's are not -
# nor what the C library reads for it: the keys it compares are its own
# copies, never written once made.)
$(WATCHED_LIB_OBJS): $(COMMON)/watched/%.o: lib/%.c $(FLAGS_STAMP)
	@mkdir -p $(@D)
	$(call say,CC,$< (instrumented))$(CC) $(KIT_CFLAGS) -fsanitize=thread $(INCLUDES) -c $< -o $@

$(KITLIB): $(patsubst %.c,$(COMMON)/%.o,$(LIB_SRCS))
	@mkdir -p $(@D)
	$(call say,AR,$@)$(AR) rcs $@ $^

define chapter_program
$(OUT)/bin/$(ch$(2)_program): $(patsubst %.c,$(COMMON)/chapters/$(1)/%.o,$(ch$(2)_main)) $(call chapter_objs,$(1)) $(KITLIB)
	@mkdir -p $$(@D)
	$$(call say,LD,$$@)$$(CC) $$(CFLAGS) $$(SAN_CFLAGS_$$(SAN)) $$(HARDENED_LDFLAGS) $$^ -o $$@ $$(ch$(2)_libs) $$(LDLIBS)
endef

define chapter_test
$(OUT)/tests/$(1)/$(3): $(COMMON)/tests/$(1)/$(3).o $(CODE_ANCHOR) $(call chapter_objs,$(1),$(TEST_OBJ)) $(call test_support_objs,$(1)) $(call chapter_test_objs,$(1),one_process) $(SUPPORT_OBJS) $(KITLIB) $(JUDGED_STAMP)
	@mkdir -p $$(@D)
	@rm -f $$@.subject # one process: a subject left from a judged build would make the runner take it for one
	$$(call say,LD,$$@)$$(call link_test,$$(CC) $$(CFLAGS) $$(SAN_CFLAGS_$$(SAN)) $$(HARDENED_LDFLAGS) $$(filter-out $$(JUDGED_STAMP),$$^) $$(TEST_WRAPS) $$(addprefix -Wl$$(comma)--wrap=,$$(ch$(2)_test_wraps)) $$(CMOCKA_LIBS) $$(ch$(2)_libs) $$(LDLIBS),$$@)
endef

# ---- Judged chapters (chNN_judged := yes) -------------------------------------------
# A judged chapter's test is two programs (docs/grading.md, "The judge and
# the subject"): the judge - the test, the harness and the proxies of the
# chapter's API generated from chapters/NN-name/judged.tsv - which links no
# object of the submission and alone gives the verdict; and NAME.subject -
# the submission, the explorer, the wrappers and the server that answers the
# judge. `make debug` (SAN=debug) still links one program, as before: the
# proxies and the API have the same names.
is_judged = $(if $(filter debug,$(SAN)),,$(filter yes,$(ch$(call number,$(1))_judged)))
JUDGE_SRCS := grader/judge/kit_wire.c grader/judge/kit_judge.c grader/judge/kit_judge_hooks.c \
              grader/judge/kit_judge_sync.c grader/judge/kit_judge_explore.c grader/judge/kit_judge_scenario.c \
              grader/judge/kit_judge_replay.c grader/judge/kit_judge_contexts.c grader/judge/kit_judge_callback.c \
              grader/judge/kit_judge_mirror.c
SERVE_SRCS := grader/subject/kit_serve.c grader/subject/kit_serve_hooks.c grader/subject/kit_seccomp.c \
              grader/subject/kit_symbolize.c grader/subject/kit_serve_scenario.c grader/subject/kit_transcript.c \
              grader/subject/kit_transcript_sync.c
JUDGE_OBJS = $(patsubst %.c,$(COMMON)/%.o,$(JUDGE_SRCS) grader/harness/kit_test.c grader/explorer/kit_scenario_check.c \
             grader/explorer/kit_text.c)
SUBJECT_SUPPORT_OBJS = $(filter-out %/kit_test.o %/kit_scenario.o,$(SUPPORT_OBJS)) \
                       $(patsubst %.c,$(COMMON)/%.o,$(SERVE_SRCS) grader/judge/kit_wire.c)
JUDGE_WRAPS := $(addprefix -Wl$(comma)--wrap=,pthread_create pthread_join pthread_detach pthread_mutex_lock \
                pthread_mutex_trylock pthread_mutex_unlock pthread_mutex_destroy pthread_cond_init pthread_cond_wait \
                pthread_cond_timedwait pthread_cond_clockwait pthread_cond_signal pthread_cond_broadcast \
                pthread_cond_destroy sched_yield nanosleep clock_nanosleep usleep clock_gettime pthread_setname_np \
                _fail _assert_in_range print_error)
SUBJECT_WRAPS := $(filter-out %=_fail %=_assert_in_range %=print_error,$(TEST_WRAPS))
# Which chapters are judged, and which of those write their explorations
# down in the subject: a change (chNN_judged=yes or chNN_transcripts= on the
# command line, or in a build.mk) rewrites this stamp, and their test
# programs link again (so do the subjects when make hardening's liar sets
# SUBJECT_FIRST_OBJS).
JUDGED_STAMP = $(OUT)/tests/.judged
JUDGED_SET = $(foreach c,$(CHAPTER_DIRS),$(if $(call is_judged,$(c))$(call is_process_judged,$(c)),$(c)$(if $(filter yes,$(ch$(call number,$(c))_transcripts)),+transcripts))) $(SUBJECT_FIRST_OBJS)
$(JUDGED_STAMP): FORCE
	@mkdir -p $(@D)
	@echo '$(JUDGED_SET)' | cmp -s - $@ 2>/dev/null || echo '$(JUDGED_SET)' > $@
$(COMMON)/judged/%/proxies.c: chapters/%/judged.tsv grader/judge/kit-proxies
	@mkdir -p $(@D)
	$(call say,GEN,$@)grader/judge/kit-proxies $< $(ch$(call number,$*)_api) judge $@
$(COMMON)/judged/%/serve.c: chapters/%/judged.tsv grader/judge/kit-proxies
	@mkdir -p $(@D)
	$(call say,GEN,$@)grader/judge/kit-proxies $< $(ch$(call number,$*)_api) subject $@
$(COMMON)/judged/%/names.h: chapters/%/judged.tsv grader/judge/kit-proxies
	@mkdir -p $(@D)
	$(call say,GEN,$@)grader/judge/kit-proxies $< $(ch$(call number,$*)_api) names $@
$(COMMON)/judged/%/record.c: chapters/%/judged.tsv grader/judge/kit-proxies
	@mkdir -p $(@D)
	$(call say,GEN,$@)grader/judge/kit-proxies $< $(ch$(call number,$*)_api) record $@
$(COMMON)/judged/%.o: $(COMMON)/judged/%.c $(FLAGS_STAMP)
	$(call say,CC,$<)$(CC) $(KIT_CFLAGS) $(TEST_CFLAGS) $(INCLUDES) $(HARNESS_INCLUDES) $(JUDGE_INCLUDES) $(CMOCKA_CFLAGS) -c $< -o $@
JUDGE_INCLUDES := -Igrader/judge
# (The generated sources are kept: they are read when a judge's message is.)
.SECONDARY: $(foreach c,$(CHAPTER_DIRS),$(foreach f,proxies.c serve.c record.c names.h,$(COMMON)/judged/$(c)/$(f)))
# An exploration's body runs in the subject, which writes each schedule down
# for the judge to replay (chNN_transcripts := yes; docs/grading.md): the
# subject links a copy of the test, its main renamed, its calls of the API
# and its pthread calls made by recorders (grader/subject/kit_transcript*.c).
transcribed = $(if $(filter yes,$(ch$(2)_transcripts)),$(filter %_explore,$(3)))
# A graded test on its one schedule is written down the same way when its
# chapter lists it (chNN_written): the subject links a copy of its test
# program's source together with copies of the harness it calls, all made
# private to that copy (ld -r, then every symbol local but its main), so
# that the harness's own pthread calls are recorded as the judge sends them.
written = $(if $(filter yes,$(ch$(2)_transcripts)),$(if $(strip $(ch$(2)_written)),$(filter-out %_explore,$(3))))
WRITTEN_HARNESS := grader/harness/kit_test.c lib/program/kit_gate.c lib/runtime/kit_time.c \
                   grader/subject/kit_transcript_gate.c
# The copy's gates stand behind kit_transcript_gate.c, as the wrappers stand
# in one process (--wrap cannot reach a private copy).
WRITTEN_GATE_RENAMES := $(foreach f,gate_wait gate_await_arrivals gate_destroy latch_wait latch_destroy,-Dkit_$(f)=kit_transcript_$(f))
# (A change of the renames or of a chapter's list rebuilds the copies, as
# FLAGS_STAMP does for flags.)
WRITTEN_SET = $(WRITTEN_RENAMES) $(WRITTEN_GATE_RENAMES) $(foreach c,$(CHAPTER_DIRS),$(c):$(ch$(call number,$(c))_written))
WRITTEN_STAMP = $(COMMON)/judged/.written
$(WRITTEN_STAMP): FORCE
	@mkdir -p $(@D)
	@echo '$(WRITTEN_SET)' | cmp -s - $@ 2>/dev/null || echo '$(WRITTEN_SET)' > $@
WRITTEN_RENAMES := -D_fail=kit_transcript_fail -D__real__fail=kit_transcript_real_fail \
                   -D__wrap__fail=kit_transcript_copy_fail -Dprint_error=kit_transcript_print_error \
                   -D__wrap_print_error=kit_transcript_print_error -D_exit=kit_transcript_exit
# The copy names the test's functions as the judge does: it keeps them with
# the judge's own bookkeeping (kit_judge_callback.c), so both give the same ids.
RECORD_OBJS = $(COMMON)/judged/$(1)/record.o $(COMMON)/grader/judge/kit_judge_callback.o
COPY_OBJS = $(if $(call transcribed,$(1),$(2),$(3)),$(COMMON)/judged/$(1)/$(3).copy.o $(call RECORD_OBJS,$(1)) $(COMMON)/grader/explorer/kit_scenario.o)$(if $(call written,$(1),$(2),$(3)),$(COMMON)/judged/$(1)/$(3).written.o $(call RECORD_OBJS,$(1)))

# $(call judged_test,NN-name,NN,test): the judge, and its subject beside it.
define judged_test
$(OUT)/tests/$(1)/$(3): $(COMMON)/tests/$(1)/$(3).o $(COMMON)/judged/$(1)/proxies.o $(call test_support_objs,$(1)) $(JUDGE_OBJS) $(KITLIB) $(JUDGED_STAMP) $(OUT)/tests/$(1)/$(3).subject
	@mkdir -p $$(@D)
	$$(call say,LD,$$@)$$(CC) $$(CFLAGS) $$(SAN_CFLAGS_$$(SAN)) $$(HARDENED_LDFLAGS) $$(filter %.o %.a,$$^) -o $$@ $$(JUDGE_WRAPS) $$(CMOCKA_LIBS) $$(LDLIBS)
$(COMMON)/judged/$(1)/$(3).copy.o: tests/$(1)/$(3).c $(COMMON)/judged/$(1)/names.h $(FLAGS_STAMP)
	@mkdir -p $$(@D)
	$$(call say,CC,$$@)$$(CC) $$(KIT_CFLAGS) $$(TEST_CFLAGS) $$(INCLUDES) $$(HARNESS_INCLUDES) $$(CMOCKA_CFLAGS) -include $(COMMON)/judged/$(1)/names.h -Dmain=kit_transcript_copy_main -Dkit_explore_run=kit_transcript_explore_run -c $$< -o $$@
$(COMMON)/judged/$(1)/$(3).written.o: tests/$(1)/$(3).c $(WRITTEN_HARNESS) grader/subject/kit_transcript_written.h $(COMMON)/judged/$(1)/names.h $(FLAGS_STAMP) $(WRITTEN_STAMP)
	@mkdir -p $$(@D)/$(3).written
	$$(call say,CC,$$@)for f in $$(filter %.c,$$^); do $$(CC) $$(KIT_CFLAGS) $$(TEST_CFLAGS) $$(INCLUDES) $$(HARNESS_INCLUDES) $$(CMOCKA_CFLAGS) -include $(COMMON)/judged/$(1)/names.h $$(WRITTEN_RENAMES) $$$$(test $$$$f = lib/program/kit_gate.c && echo '$$(WRITTEN_GATE_RENAMES)') -Dmain=kit_transcript_copy_main -DKIT_TRANSCRIPT_WRITTEN='"$(strip $(ch$(2)_written))"' $$$$(test $$$$f = $$< && echo -include grader/subject/kit_transcript_written.h || echo -Dkit_test_main=kit_transcript_copy_test_main -DKIT_TRANSCRIPT_COPY) -c $$$$f -o $$(@D)/$(3).written/$$$$(basename $$$$f .c).o || exit 1; done; \
	  ld -r -o $$@.all $$(@D)/$(3).written/*.o && objcopy --keep-global-symbol=kit_transcript_copy_main \
	  --keep-global-symbol=kit_transcript_written --keep-global-symbol=kit_transcript_copy_fail $$@.all $$@ && rm -f $$@.all
$(OUT)/tests/$(1)/$(3).subject: $(COMMON)/judged/$(1)/serve.o $(call COPY_OBJS,$(1),$(2),$(3)) $(CODE_ANCHOR) $(call chapter_objs,$(1),$(TEST_OBJ)) $(call test_support_objs,$(1)) $(SUBJECT_SUPPORT_OBJS) $(KITLIB) $(JUDGED_STAMP)
	@mkdir -p $$(@D)
	$$(call say,LD,$$@)$$(call link_test,$$(CC) $$(CFLAGS) $$(SAN_CFLAGS_$$(SAN)) $$(HARDENED_LDFLAGS) $$(SUBJECT_FIRST) $$(filter-out $$(JUDGED_STAMP),$$^) $$(SUBJECT_WRAPS) $$(addprefix -Wl$$(comma)--wrap=,$$(ch$(2)_test_wraps)) $$(CMOCKA_LIBS) $$(ch$(2)_libs) $$(LDLIBS),$$@)
endef
# ---- A chapter judged by processes (chNN_judged := processes) --------------------------
# Chapter 07's code under test runs in processes the test starts - its
# workers, and the reaper the master runs - never in the test's own
# (tests/07-distributed-workers/dmw_call.h). Its judge is the test with
# the kit's code of the chapter and chNN_judge - in place of the
# submission's two functions, stand-ins that make each call in a process
# of its own - and no object of the submission; NAME.subject is the one
# program that links the submission, with chNN_subject, which makes the
# call it is handed behind its system-call filter.
is_process_judged = $(if $(filter debug,$(SAN)),,$(filter processes,$(ch$(call number,$(1))_judged)))
judge_chapter_objs = $(call support_objs,$(1))
PROCESS_SUBJECT_OBJS = $(SUPPORT_OBJS) $(COMMON)/grader/subject/kit_seccomp.o
define process_judged_test
$(OUT)/tests/$(1)/$(3): $(COMMON)/tests/$(1)/$(3).o $(call judge_chapter_objs,$(1)) $(call test_support_objs,$(1)) $(call chapter_test_objs,$(1),judge) $(SUPPORT_OBJS) $(KITLIB) $(JUDGED_STAMP) $(OUT)/tests/$(1)/$(3).subject
	@mkdir -p $$(@D)
	$$(call say,LD,$$@)$$(CC) $$(CFLAGS) $$(SAN_CFLAGS_$$(SAN)) $$(HARDENED_LDFLAGS) $$(filter %.o %.a,$$^) -o $$@ $$(TEST_WRAPS) $$(addprefix -Wl$$(comma)--wrap=,$$(ch$(2)_test_wraps)) $$(CMOCKA_LIBS) $$(ch$(2)_libs) $$(LDLIBS)
$(OUT)/tests/$(1)/$(3).subject: $(call chapter_test_objs,$(1),subject) $(CODE_ANCHOR) $(call chapter_objs,$(1),$(TEST_OBJ)) $(PROCESS_SUBJECT_OBJS) $(KITLIB) $(JUDGED_STAMP)
	@mkdir -p $$(@D)
	$$(call say,LD,$$@)$$(call link_test,$$(CC) $$(CFLAGS) $$(SAN_CFLAGS_$$(SAN)) $$(HARDENED_LDFLAGS) $$(SUBJECT_FIRST) $$(filter-out $$(JUDGED_STAMP),$$^) $$(TEST_WRAPS) $$(addprefix -Wl$$(comma)--wrap=,$$(ch$(2)_test_wraps)) $$(CMOCKA_LIBS) $$(ch$(2)_libs) $$(LDLIBS),$$@)
endef
# The objects of $(2) whose path holds any of the texts $(1) (make lint's
# check-judge; a pattern of filter has one wildcard, too few for a path's middle).
objects_named = $(strip $(foreach o,$(2),$(if $(strip $(foreach w,$(1),$(findstring $(w),$(o)))),$(o))))
# What every judge of a chapter judged by processes links (make lint: none of the submission's).
PROCESS_JUDGE_OBJS = $(foreach c,$(CHAPTER_DIRS),$(if $(call is_process_judged,$(c)),$(call judge_chapter_objs,$(c)) $(call chapter_test_objs,$(c),judge) $(call test_support_objs,$(c))))

# make hardening's liar (tests/hostile/liar): objects linked into every
# subject before its own, whose definitions win - a subject taken over whole.
SUBJECT_FIRST_OBJS ?=
SUBJECT_FIRST = $(if $(SUBJECT_FIRST_OBJS),-Wl$(comma)--allow-multiple-definition $(SUBJECT_FIRST_OBJS))

$(OUT)/tests/kit/%: $(COMMON)/tests/kit/%.o $(SUPPORT_OBJS) $(KITLIB)
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CC) $(CFLAGS) $(SAN_CFLAGS_$(SAN)) $(HARDENED_LDFLAGS) $^ -o $@ $(TEST_WRAPS) $(CMOCKA_LIBS) $(LDLIBS)
$(OUT)/tests/kit/test_memaccess: $(call kit_test_code,tests/kit/memaccess_code.c)
$(call kit_test_code,$(KIT_TEST_CODE)): $(COMMON)/tests-code/%.o: tests/%.c $(FLAGS_STAMP)
	@mkdir -p $(@D)
	$(call say,CC,$<$(if $(filter sched,$(TEST_OBJ)), (instrumented)))$(CC) $(KIT_CFLAGS) \
	  $(if $(filter sched,$(TEST_OBJ)),$(INSTRUMENT)) $(INCLUDES) -c $< -o $@ \
	  $(if $(filter sched,$(TEST_OBJ)),&& $(call redirect_accesses,$@))

define solution_linked_test
$(OUT)/tests/$(1): $(COMMON)/tests/$(1).o $(foreach c,$(FAULT_CHAPTERS),$(call impl_objs,$(c),$(TEST_OBJ))) $(SUPPORT_OBJS) $(KITLIB)
	@mkdir -p $$(@D)
	$$(call say,LD,$$@)$$(CC) $$(CFLAGS) $$(SAN_CFLAGS_$$(SAN)) $$(HARDENED_LDFLAGS) $$^ -o $$@ $$(TEST_WRAPS) $$(CMOCKA_LIBS) -lm $$(LDLIBS)
endef
$(foreach t,$(SOLUTION_LINKED_TESTS),$(eval $(call solution_linked_test,$(t))))
# $(call chapter_fault_test,faults/test_faults_NN,NN-name,NN)
define chapter_fault_test
$(OUT)/tests/$(1): $(COMMON)/tests/$(1).o $(call chapter_objs,$(2),$(TEST_OBJ)) $(SUPPORT_OBJS) $(KITLIB)
	@mkdir -p $$(@D)
	$$(call say,LD,$$@)$$(CC) $$(CFLAGS) $$(SAN_CFLAGS_$$(SAN)) $$(HARDENED_LDFLAGS) $$^ -o $$@ $$(TEST_WRAPS) $$(CMOCKA_LIBS) $$(ch$(3)_libs) $$(LDLIBS)
endef
$(foreach t,$(CHAPTER_FAULT_TESTS),$(if $(call fault_test_chapter,$(t)),$(eval $(call chapter_fault_test,$(t),$(call fault_test_chapter,$(t)),$(call number,$(call fault_test_chapter,$(t))))),$(error tests/$(t).c: no chapter has the number it ends with)))

$(foreach c,$(CHAPTER_DIRS),$(eval $(call chapter_program,$(c),$(call number,$(c)))))
$(foreach c,$(CHAPTER_DIRS),$(foreach t,$(ch$(call number,$(c))_tests),$(eval $(call $(if $(call is_judged,$(c)),judged_test,$(if $(call is_process_judged,$(c)),process_judged_test,chapter_test)),$(c),$(call number,$(c)),$(t)))))

# The runner, the confinement and admission are tools, not code under test:
# always built plainly, once.
TOOL_CFLAGS := -std=c11 -Wall -Wextra -Wpedantic $(WERROR) -O2 -g
$(GRADER): $(GRADER_SRCS) grader/runner/grader.h grader/confine/confine.h
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CC) $(TOOL_CFLAGS) -Igrader/confine $(GRADER_SRCS) -o $@
$(CONFINE): $(CONFINE_SRCS) grader/confine/confine.h
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CC) $(TOOL_CFLAGS) -Igrader/confine $(CONFINE_SRCS) -o $@
$(ADMIT): $(ADMIT_SRCS) grader/admission/admission.h
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CC) $(TOOL_CFLAGS) -Igrader/admission $(ADMIT_SRCS) -o $@

# ---- Building a submission, confined -------------------------------------------
# What a confined step may see besides the system and the kit's headers: the
# stage at IMPL, the objects it links, and a work folder of its own, the
# only place it may write. Limits: 2 minutes, 2 GB, 64 tasks, 256 KB of output.
CONFINED ?=
STAGE ?=
FINDINGS ?=
confine_step = $(CONFINE) --kit $(CURDIR) --ro-at $(abspath $(STAGE)) $(abspath $(IMPL)) \
               --wall 120 --cpu 120 --memory 2048 --tasks 64 --output 256 $(1) --
# What admission admits for chapter $(1): its own functions, those of the
# chapters it builds on, its extra imports, the kit's runtime, imports.allow -
# less what the chapter forbids (chNN_forbids: the calls its lesson builds).
admit_rules = --chapter $(1) --defines '$(ch$(call number,$(1))_defines)' --forbids '$(ch$(call number,$(1))_forbids)' \
             --imports '$(foreach d,$(ch$(call number,$(1))_uses),$(ch$(call number,$(d))_defines)) $(ch$(call number,$(1))_imports)' \
             --allow grader/admission/imports.allow $(addprefix --runtime ,$(patsubst %.c,$(COMMON)/%.o,$(RUNTIME_SRCS))) \
             $(ADMIT_TRUSTED)
# $(call confined_compile,NN-name/file,object,extra flags,admission variant):
# preprocess, admit the text, compile, admit the object, keep it (an
# instrumented one with its library calls renamed, confined as well).
ADMIT_TRUSTED = --trusted /usr --trusted $(CURDIR)/chapters --trusted $(CURDIR)/lib
confined_compile = rm -rf $(2).work && mkdir -p $(2).work && \
  $(call confine_step,--rw $(abspath $(2).work)) $(CC) $(WARNINGS) $(CFLAGS) $(SAN_CFLAGS_$(SAN)) $(3) $(INCLUDES) \
    -E $(IMPL)/$(1).c -o $(2).work/source.i && \
  $(ADMIT) source --chapter $(firstword $(subst /, ,$(1))) --source $(2).work/source.i --findings $(FINDINGS) \
    $(ADMIT_TRUSTED) && \
  $(call confine_step,--rw $(abspath $(2).work)) $(CC) $(WARNINGS) $(CFLAGS) $(SAN_CFLAGS_$(SAN)) $(3) \
    -c $(2).work/source.i -o $(2).work/object.o && \
  $(ADMIT) object $(call admit_rules,$(firstword $(subst /, ,$(1)))) --variant $(4) \
    --object $(2).work/object.o --source $(2).work/source.i --display $(IMPL)/$(1).c --findings $(FINDINGS) && \
  $(if $(filter sched,$(4)),$(call confine_step,--rw $(abspath $(2).work)) $(call redirect_accesses,$(2).work/object.o) &&) \
  mv $(2).work/object.o $(2) && rm -rf $(2).work
# $(call link_test,command,binary): the link, confined when CONFINED (it
# reads the submission's objects), into a work folder; only the binary is
# kept, and only if admission admits it (kit-admit binary: no memory both
# writable and executable, no executable stack).
link_test = $(if $(CONFINED),rm -rf $(2).work && mkdir -p $(2).work && \
  $(call confine_step,--ro $(abspath $(COMMON)) --ro $(abspath $(OUT)/obj) $(addprefix --ro ,$(abspath $(wildcard reference))) \
    --rw $(abspath $(2).work)) $(1) -o $(2).work/test && \
  test -f $(2).work/test && ! test -L $(2).work/test && \
  $(ADMIT) binary --chapter $(notdir $(patsubst %/,%,$(dir $(2)))) --binary $(2).work/test \
    --display "$(IMPL)/$(notdir $(patsubst %/,%,$(dir $(2)))) (linked into $(notdir $(2)))" --findings $(FINDINGS) && \
  mv $(2).work/test $(2) && rm -rf $(2).work,$(1) -o $(2))

# (A confined build writes none in $(OUT)/obj: only the kit's own are read.)
-include $(shell find $(if $(CONFINED),,$(OUT)/obj) $(COMMON) -name '*.d' 2>/dev/null)

# The first line of an instructor's target: the student kit has no solutions/
# nor the files such a target works on, so it says so instead of failing deep down.
INSTRUCTOR_ONLY = @$(if $(HAVE_SOLUTIONS),:,echo "make $@ is an instructor's tool, left out of the student kit (make help lists yours)"; exit 2)

# ---- Building -------------------------------------------------------------------------
.PHONY: all programs tests-bin grader deps
all: ## build every program, and every test once cmocka is there (of the solutions and the exercises, or of IMPL)
	@$(MAKE) --no-print-directory -j$(JOBS) compile_commands.json programs grader $(if $(HAVE_SOLUTIONS),&& $(MAKE) --no-print-directory -j$(JOBS) IMPL=exercises programs)
	@if tools/bootstrap --have cmocka; then $(MAKE) --no-print-directory -j$(JOBS) tests-bin $(if $(filter solutions,$(IMPL)),&& $(MAKE) --no-print-directory -j$(JOBS) IMPL=exercises tests-bin); \
	else echo "(the tests need cmocka, which is not installed: make deps installs it)"; fi

programs: $(PROGRAMS) ## the chapter programs, for IMPL
tests-bin: $(TEST_BINS) $(if $(strip $(CH)),,$(KIT_TEST_BINS) $(FAULT_TEST_BINS)) ## the test programs, for IMPL
grader: $(GRADER) $(CONFINE) $(ADMIT)

# Installs what `make test` needs (cmocka, pkg-config, doxygen, graphviz,
# mscgen) when it can, or says exactly what to run. Only the targets that
# need them call it.
deps: ## install what tests, grading and docs need (cmocka, pkg-config, doxygen, graphviz, mscgen, gdb)
	@tools/bootstrap

# ---- Editors ----------------------------------------------------------------------------
# compile_commands.json tells clangd (VS Code, Vim, Emacs) how each file is
# compiled: every include and flag, for lib/, the harness, the programs, the
# tests, solutions/, exercises/, the grader and the benchmark. `make all`
# writes it; tools/check-compile-commands proves it covers every compiled file.
chapter_srcs = $(addprefix chapters/$(1)/,$(ch$(call number,$(1))_main) $(ch$(call number,$(1))_support)) \
               $(addprefix tests/$(1)/,$(addsuffix .c,$(ch$(call number,$(1))_tests)) $(sort $(ch$(call number,$(1))_test_support) \
                 $(ch$(call number,$(1))_one_process) $(ch$(call number,$(1))_judge) $(ch$(call number,$(1))_subject)))
COMMON_SRCS = $(LIB_SRCS) $(SUPPORT_SRCS) $(foreach c,$(CHAPTER_DIRS),$(call chapter_srcs,$(c))) \
              $(addprefix tests/kit/,$(addsuffix .c,$(KIT_TESTS))) $(KIT_TEST_CODE) $(addsuffix .c,$(addprefix tests/,$(SOLUTION_LINKED_TESTS) $(CHAPTER_FAULT_TESTS))) \
              $(FEEDBACK_SRCS) $(JUDGE_SRCS) $(SERVE_SRCS) $(CODE_ANCHOR_SRC) grader/subject/kit_transcript_gate.c
IMPL_SRCS = $(wildcard $(foreach d,solutions exercises,$(foreach c,$(CHAPTER_DIRS),$(addprefix $(d)/$(c)/,$(ch$(call number,$(c))_impl)))))
# One entry: $(1) the file, $(2) its flags.
compile_entry = printf '  {"directory": "%s", "file": "%s", "command": "%s"},\n' '$(CURDIR)' '$(1)' '$(CC) $(strip $(filter-out -MMD -MP,$(2))) -c $(1)';
compile_commands.json: Makefile $(wildcard chapters/*/build.mk)
	$(call say,GEN,$@){ echo '['; \
	  $(foreach f,$(COMMON_SRCS),$(call compile_entry,$(f),$(KIT_CFLAGS) $(INCLUDES) $(if $(filter tests/% grader/%,$(f)),$(TEST_CFLAGS) $(HARNESS_INCLUDES) $(CMOCKA_CFLAGS)))) \
	  $(foreach f,$(IMPL_SRCS),$(call compile_entry,$(f),$(KIT_CFLAGS) $(INCLUDES))) \
	  $(foreach f,$(sort $(GRADER_SRCS) $(CONFINE_SRCS) $(ADMIT_SRCS)),$(call compile_entry,$(f),-std=c11 -Wall -Wextra -Wpedantic -O2 -g -Igrader/confine -Igrader/admission)) \
	  $(foreach f,$(BENCH_SRCS),$(call compile_entry,$(f),$(KIT_CFLAGS) $(INCLUDES) $(GLIB_CFLAGS))) \
	} | sed '$$ s/},$$/}/' > $@.tmp && echo ']' >> $@.tmp && mv $@.tmp $@

# ---- Running --------------------------------------------------------------------------
.PHONY: run
run: ## build and run the chapter programs (CH=NN for one, IMPL=exercises for yours)
	@$(MAKE) --no-print-directory -j$(JOBS) programs
	@status=0; for prog in $(RUN_PROGRAMS); do \
	  printf '\n======== %s ========\n' "$$prog"; \
	  "$$prog"; rc=$$?; [ $$rc -eq 0 ] || { status=1; echo "($$prog exited with status $$rc: $(RUN_FAILED_HINT))"; }; \
	done; exit $$status
RUN_FAILED_HINT = $(if $(filter solutions,$(IMPL)),see its message above,see its message above; ENOSYS means that exercise is not written yet)

# ---- Testing --------------------------------------------------------------------------
# RUBRIC: the lines graded (make hardening grades a few of them, for the
# submissions that spend every test's time).
RUBRIC ?= tests/rubric.tsv
GRADE_FLAGS = --rubric $(RUBRIC) --source-root $(CURDIR)/ --timeout $(TIMEOUT) $(foreach c,$(ACTIVE),--chapter $(c))
# make test, tsan, valgrind, asan also run lib/'s own tests when no chapter is picked.
CHECK_FLAGS = $(GRADE_FLAGS) $(if $(strip $(CH)),,--chapter kit --chapter faults --chapter traces)

.PHONY: test tsan valgrind asan smoke
# The student's pages teach the pattern, not the exercise's code: no page of
# the student kit holds 3 consecutive lines of a solution (tools/check-copied-code).
test: $(if $(HAVE_SOLUTIONS),deps) ## run every test against the solutions, smoke-run the programs, check the pages hold no solution code
	@$(if $(HAVE_SOLUTIONS),:,echo "make test proves the kit against its reference solutions, which the student kit leaves out: to test your code, run make grade CH=NN"; exit 2)
	@$(MAKE) --no-print-directory -j$(JOBS) programs tests-bin grader
	@$(SKIP_NOTE) start=$$(date +%s); $(GRADER) --mode test --bin $(OUT)/tests --report build/test $(CHECK_FLAGS); rc=$$?; \
	  echo "Suite time: $$(( $$(date +%s) - start )) s"; exit $$rc
	@$(MAKE) --no-print-directory smoke
	@tools/check-copied-code

smoke: programs ## run each program briefly, with --help, and with every kind of bad option value
	@$(foreach c,$(ACTIVE),tools/smoke $(OUT)/bin/$(ch$(call number,$(c))_program) $(ch$(call number,$(c))_smoke) &&) true
	@$(foreach c,$(ACTIVE),tools/bad-input $(OUT)/bin/$(ch$(call number,$(c))_program) &&) true

# ThreadSanitizer needs a memory layout some kernels' address randomisation
# breaks ("unexpected memory mapping"); running without randomisation fixes it.
TSAN_WRAPPER := $(shell setarch $$(uname -m) -R true 2>/dev/null && echo "setarch $$(uname -m) -R")
VALGRIND := valgrind -q --error-exitcode=99 --leak-check=full --show-leak-kinds=definite,indirect \
            --errors-for-leak-kinds=definite,indirect --fair-sched=yes

# With SUBMISSION=dir, and in the student kit, make tsan grades as make
# grade does - staged, built and run confined - with every chapter's
# race-free line earned by its own ThreadSanitizer build on real threads,
# each test's report in the logs. Otherwise each test runs under it, a
# report fails the test (a thread never joined is a THREAD LEAK, not a
# race), and each chapter's race-free line is scored from those runs
# (--race-line): the chapter's whole rubric.
tsan: deps ## every test under ThreadSanitizer (a race report fails the test, the race-free line scored from them); SUBMISSION=dir: grade it so
ifneq ($(or $(SUBMISSION),$(if $(HAVE_SOLUTIONS),,student)),)
	@$(MAKE) --no-print-directory grade TSAN_EVERY_CHAPTER=1 GRADE_REPORT=build/grade-tsan
else
	@$(MAKE) --no-print-directory -j$(JOBS) SAN=tsan tests-bin
	@$(MAKE) --no-print-directory -s grader
	@KIT_SLOW=1 $(GRADER) --mode test --bin $(OUT_ROOT)/tsan/tests --report build/test-tsan --race-line \
	  --wrapper "$(TSAN_WRAPPER)" $(CHECK_FLAGS) --timeout $$(( $(TIMEOUT) * 4 ))
endif

# make asan builds the kit's own code (solutions/, or exercises/ in the
# student kit) with the sanitizers, unconfined. A submission's objects are
# admitted only as make grade builds them, so SUBMISSION=dir is refused, not
# quietly ignored.
ASAN_NOT_A_SUBMISSION = make asan builds the kit's own code, not SUBMISSION=$(SUBMISSION): admission admits a \
  submission only as make grade builds it. To run a submission under AddressSanitizer, copy its files into \
  exercises/ of a copy of the kit and run make asan IMPL=exercises there (unconfined: only for code you trust).
asan: deps ## every test under AddressSanitizer + UndefinedBehaviorSanitizer + LeakSanitizer (of the kit's own code)
	@$(if $(SUBMISSION),echo "$(ASAN_NOT_A_SUBMISSION)"; exit 2)
	@$(MAKE) --no-print-directory -j$(JOBS) SAN=asan tests-bin
	@$(MAKE) --no-print-directory -s grader
	@KIT_SLOW=1 $(GRADER) --mode test --bin $(OUT_ROOT)/asan/tests --report build/test-asan \
	  --unlimited-memory $(CHECK_FLAGS) --timeout $$(( $(TIMEOUT) * 4 ))

valgrind: deps ## every test under valgrind memcheck: no errors, no leaks
	@command -v valgrind >/dev/null || { echo "valgrind is not installed: sudo apt-get install valgrind"; exit 1; }
	@$(MAKE) --no-print-directory -j$(JOBS) tests-bin grader
	@KIT_SLOW=1 $(GRADER) --mode test --bin $(OUT)/tests --report build/test-valgrind \
	  --wrapper "$(VALGRIND)" $(CHECK_FLAGS) --timeout $$(( $(TIMEOUT) * 10 ))

# ---- Grading --------------------------------------------------------------------------
# SUBMISSION may be a copy of exercises/ or a whole kit tree (then its exercises/ is used).
# ($(wildcard) also expands a ~ the shell left alone, as in SUBMISSION=~/work.)
SUBMISSION ?=
SUBMISSION_DIR := $(if $(SUBMISSION),$(firstword $(wildcard $(SUBMISSION)/)))
ifneq ($(SUBMISSION),)
ifeq ($(SUBMISSION_DIR),)
$(error SUBMISSION=$(SUBMISSION) is not a folder: give the folder that holds the NN-name/ folders, or a whole kit)
endif
endif
GRADE_IMPL := $(if $(SUBMISSION),$(abspath $(if $(wildcard $(SUBMISSION_DIR)exercises/),$(SUBMISSION_DIR)exercises,$(SUBMISSION_DIR))),exercises)
GRADE_OUT   = $(call out_root,$(GRADE_IMPL))
GRADE_REPORT ?= build/grade
AUTOLAB ?=
# The stress tests' seed when graded (SEED=N replaces it): `make debug` uses
# the same, so that it replays the schedule the grade saw.
GRADE_SEED := 20261130
# What each failing test's `make debug CH=NN TEST=name` hint adds, so that it
# debugs what was graded (run_autograder empties it: the student debugs at home).
DEBUG_ARGS ?= $(strip $(if $(SUBMISSION),SUBMISSION=$(SUBMISSION)) $(if $(filter mine,$(EARLIER)),EARLIER=mine) \
                $(if $(SEED),SEED=$(SEED)) $(if $(CHAOS),CHAOS=$(CHAOS)) $(if $(REAL_THREADS),REAL_THREADS=1))
# Grading runs untrusted code, always confined (grader/confine/confine.h):
# bubblewrap's namespaces where the machine has them and, as root, this
# unprivileged uid (a free one from it on: two grades never share one), with
# this many CPUs at most. UNCONFINED=1 lets grade-all run where nothing can
# confine a submission; make grade says so and goes on.
SANDBOX_UID ?= 64000
SANDBOX_CPUS ?= $(JOBS)
UNCONFINED ?=

# What is graded is never built from the submission's folder, but from a
# stage: the exercise's files alone, each a plain file, copied there by the
# admission (kit-admit stage); a file the submission lacks is the untouched stub.
# GRADE_IMPL is where those files appear inside the confinement, and what
# every message names: the student's own paths.
# EARLIER=mine also stages the earlier chapters the graded ones build on
# (those the kit hands out: it has their exercises): their objects are then
# built from the submission's own files.
stage_files = $(ch$(call number,$(1))_impl) $(notdir $(wildcard exercises/$(1)/*.h))
STAGED = $(sort $(ACTIVE) $(if $(filter mine,$(EARLIER)),$(foreach c,$(ACTIVE),$(foreach u,$(ch$(call number,$(c))_uses),$(if $(wildcard exercises/$(u)),$(u))))))
STAGE_CHAPTERS = $(foreach c,$(STAGED),--chapter $(c) $(call stage_files,$(c)))
# $(call stage_submission,report folder): stages what is graded there: the
# exercises/ folder, or the SUBMISSION folder (whose own exercises/ admission
# takes if it is a real folder; a link there is refused, not followed).
# LOOSE=1 (Gradescope) takes each exercise file by its name, at any depth.
LOOSE ?=
stage_submission = rm -rf $(1)/stage $(1)/gate && mkdir -p $(1) && \
  $(ADMIT) stage --from $(or $(SUBMISSION_DIR),exercises) $(if $(SUBMISSION),--kit-tree) $(if $(LOOSE),--loose) \
    --to $(1)/stage --findings $(1)/gate --stubs exercises $(STAGE_CHAPTERS)
# $(call submission_build,report folder): make's variables that build what
# is graded from the stage there, confined and admitted.
submission_build = IMPL=$(GRADE_IMPL) CONFINED=1 STAGE=$(1)/stage FINDINGS=$(1)/gate WERROR=
# The chapters whose race-free line is a ThreadSanitizer run (chNN_races := tsan).
TSAN_CHAPTERS = $(foreach c,$(ACTIVE),$(if $(or $(TSAN_EVERY_CHAPTER),$(filter tsan,$(ch$(call number,$(c))_races))),--tsan-chapter $(c)))
# Where the machine cannot confine a submission, every grade says so first.
CONFINE_NOTE = level=$$($(CONFINE) --probe) || echo "NOT CONFINED - $${level\#*: }"

.PHONY: grade
grade: deps ## score the exercises (or SUBMISSION=dir) against tests/rubric.tsv; ends with each chapter's score and the test to debug first
	@$(MAKE) --no-print-directory -s grader
	@echo "Building $(GRADE_IMPL) ..."
	@$(call stage_submission,$(GRADE_REPORT))
	@$(CONFINE_NOTE)
	@$(SKIP_NOTE) SEED=$${SEED:-$(GRADE_SEED)} $(GRADER) --mode grade --bin $(GRADE_OUT)/tests --report $(GRADE_REPORT) --implementation "$(GRADE_IMPL)" \
	  --build '$(MAKE) --no-print-directory -k -s -j$(JOBS) $(call submission_build,$(GRADE_REPORT)) tests-bin >$(GRADE_REPORT)/build.log 2>&1' \
	  --build-log $(GRADE_REPORT)/build.log --gate $(GRADE_REPORT)/gate --stage $(GRADE_REPORT)/stage \
	  --confine $(CONFINE) \
	  $(if $(wildcard tests/wakeups.tsv),--wakeups tests/wakeups.tsv) \
	  --tsan-bin $(GRADE_OUT)/tsan/tests --tsan-wrapper "$(TSAN_WRAPPER)" $(TSAN_CHAPTERS) $(if $(AUTOLAB),--autolab) \
	  --sandbox-uid $(SANDBOX_UID) --sandbox-cpus $(SANDBOX_CPUS) $(if $(CHAOS),--chaos $(CHAOS)) \
	  --tsan-build '$(MAKE) --no-print-directory -s -j$(JOBS) $(call submission_build,$(GRADE_REPORT)) SAN=tsan CH=$$KIT_CHAPTER tests-bin >>$(GRADE_REPORT)/build.log 2>&1' \
	  $(if $(TSAN_EVERY_CHAPTER),--tsan-always) $(if $(REAL_THREADS),--real-threads) --debug-args '$(DEBUG_ARGS)' $(GRADE_FLAGS)

# make debug CH=NN TEST=name: one test of the code being graded (exercises/,
# or SUBMISSION=dir) under gdb, in the foreground, built unoptimised
# (SAN=debug; SAN=tsan debugs the ThreadSanitizer build), with the grade's
# SEED and CHAOS: a test graded on one schedule runs on the same schedule
# (the same seed gives the same interleaving, optimised or not; a
# sanitizer build runs real threads). grader/harness/debug.gdb stops it where it fails (a
# breakpoint on the harness's _fail, which every check calls), where
# ThreadSanitizer reports a race, and gdb stops by itself on a crash.
# KIT_DEBUG=1 turns the harness's own hang checks off (its bounded waits
# wait for ever, its crash handler leaves the stacks to gdb): a hang stays a
# hang until Ctrl-C, with every thread where it got stuck.
# A SUBMISSION is staged, built and debugged confined, as make grade does:
# gdb and the test run inside, on the terminal (kit-confine --interactive).
TEST ?=
DEBUG_SAN = $(or $(SAN),debug)
DEBUG_TESTS = $(call out_root,$(GRADE_IMPL))/$(DEBUG_SAN)/tests/$(strip $(SELECTED))
DEBUG_REPORT := build/debug
# The test program that has test $(TEST): read from the tests' sources, never
# by running a program built from a submission.
find_test_binary = bin=""; for src in tests/$(strip $(SELECTED))/test_*.c; do \
  grep -qE "\($(TEST)[,)]" "$$src" && bin=$(1)/$$(basename "$$src" .c); done
debug_confinement = $(if $(SUBMISSION),$(CONFINE) --kit $(CURDIR) --interactive --ro $(abspath $(DEBUG_TESTS)) \
  --ro-at $(abspath $(DEBUG_REPORT)/stage) $(GRADE_IMPL) --ro $(CURDIR)/tests --ro $(CURDIR)/grader/harness/debug.gdb \
  --memory 4096 --tasks 256 --)
.PHONY: debug
debug: deps ## one test under gdb, unoptimised: make debug CH=NN TEST=name, as make grade names it (stops where it fails, crashes or hangs)
	@if [ -z "$(TEST)" ] || [ $(words $(SELECTED)) -ne 1 ]; then \
	  echo "usage: make debug CH=NN TEST=test_name [SUBMISSION=dir]  (make grade CH=NN names the tests)"; exit 2; fi
	@$(MAKE) --no-print-directory -s grader
	@$(if $(SUBMISSION),$(call stage_submission,$(DEBUG_REPORT)) && ! cat $(DEBUG_REPORT)/gate/*.txt 2>/dev/null)
	@$(if $(SUBMISSION),$(CONFINE) --slot --) $(MAKE) --no-print-directory -s -j$(JOBS) \
	  $(if $(SUBMISSION),$(call submission_build,$(DEBUG_REPORT)),IMPL=$(GRADE_IMPL) WERROR=) SAN=$(DEBUG_SAN) CH=$(CH) tests-bin
	@$(call find_test_binary,$(DEBUG_TESTS)); \
	if [ -z "$$bin" ] || [ ! -x "$$bin" ]; then echo "no test called $(TEST) in chapter $(strip $(SELECTED)): make grade CH=$(CH) lists them"; exit 2; fi; \
	echo "Debugging $(TEST) of $(GRADE_IMPL) ($$bin)"; \
	echo "gdb stops where it fails or crashes; if it hangs, press Ctrl-C. Then: bt (where), frame N, print x, info threads, thread apply all bt, quit"; \
	KIT_DEBUG=1 SEED=$${SEED:-$(GRADE_SEED)} $(if $(CHAOS),KIT_CHAOS=$(CHAOS)) $(if $(SCENARIO),KIT_SCENARIO=$(SCENARIO)) \
	  $(if $(REAL_THREADS),,KIT_SCHEDULE_TESTS=$${SEED:-$(GRADE_SEED)}) $(debug_confinement) gdb -q $(if $(filter tsan,$(DEBUG_SAN)),-ex 'set $$kit_tsan = 1') -x grader/harness/debug.gdb --args "$$bin" --run "$(TEST)"

# A class: grade-all grades it (or SHARD=k/N, a share of it: tools/slurm/
# runs the shares as a Slurm array; ONLY=name regrades one student), then
# writes the gradebook; make gradebook writes it again from the results
# found in build/grade-all/, every share's. ROSTER=roster.csv (folder, id,
# name, email) adds the students and the LMS exports (CANVAS_IDS="01=4757":
# a chapter's Canvas assignment). They are passed on in the environment:
# a folder's or a student's name never reaches a command line.
SUBMISSIONS ?=
SHARD ?=
ONLY ?=
ROSTER ?=
CANVAS_IDS ?=
export SHARD ONLY ROSTER CANVAS_IDS
.PHONY: grade-all gradebook similarity
grade-all: $(if $(HAVE_SOLUTIONS),deps) ## grade every folder in SUBMISSIONS=dir (JOBS at a time; SHARD=k/N a share, ONLY=name one): gradebook, reports
	$(INSTRUCTOR_ONLY)
	@test -n "$(SUBMISSIONS)" || { echo "usage: make grade-all SUBMISSIONS=dir [JOBS=N] [CH=NN] [SHARD=k/N] [ONLY=name] [ROSTER=roster.csv]"; exit 2; }
	@tools/grade-all $(SUBMISSIONS) $(JOBS)

gradebook: ## merge the results in build/grade-all (every share's) into gradebook.csv, the LMS exports (ROSTER=) and report.html
	$(INSTRUCTOR_ONLY)
	@tools/gradebook build/grade-all $${ROSTER:+--roster "$$ROSTER"} --canvas-ids "$$CANVAS_IDS"

SIMILAR ?= 80
similarity: ## compare the graded class's files chapter by chapter (sim_c), the stub's lines left out: pairs above SIMILAR percent
	$(INSTRUCTOR_ONLY)
	@tools/similarity build/grade-all $(SIMILAR)

REPEAT ?= 20
HOGS ?=
.PHONY: stress
stress: $(if $(HAVE_SOLUTIONS),deps) ## run the suite REPEAT times (20) against HOGS CPU hogs; report any failure with its seed
	$(INSTRUCTOR_ONLY)
	@$(MAKE) --no-print-directory -j$(JOBS) tests-bin grader
	@HOGS=$(HOGS) tools/stress $(REPEAT) --bin build/tests $(CHECK_FLAGS)

.PHONY: hardening
hardening: $(if $(HAVE_SOLUTIONS),deps) ## grade the hostile submissions of tests/hostile: each must score 0, harming nothing
	$(INSTRUCTOR_ONLY)
	@tools/hardening

# make feedback: what the grader says about a crash, a hang (the test's own
# check and the runner's time-out), a misused pthread call and a race, on the
# deliberately wrong code of tests/feedback, checked against its expect.txt.
FEEDBACK_SRCS := tests/feedback/test_feedback.c
# Its "submission" is built as a chapter's code is on a schedule
# (KIT_TEST_CODE): the explorer sees its loads, stores and library copies.
$(OUT)/tests/feedback/test_feedback: $(patsubst %.c,$(COMMON)/%.o,$(FEEDBACK_SRCS)) \
  $(call kit_test_code,tests/feedback/buggy.c tests/feedback/buggy_copy.c) $(SUPPORT_OBJS) $(KITLIB)
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CC) $(CFLAGS) $(SAN_CFLAGS_$(SAN)) $(HARDENED_LDFLAGS) $^ -o $@ $(TEST_WRAPS) $(CMOCKA_LIBS) $(LDLIBS)

.PHONY: feedback
feedback: $(if $(HAVE_SOLUTIONS),deps) ## check the grader's words for a crash, a hang, a race, a misused call (tests/feedback)
	$(INSTRUCTOR_ONLY)
	@$(MAKE) --no-print-directory -j$(JOBS) grader build/tests/feedback/test_feedback
	@$(MAKE) --no-print-directory -j$(JOBS) SAN=tsan build/tsan/tests/feedback/test_feedback
	@tools/feedback "$(TSAN_WRAPPER)"

print-%:
	@echo $($*)

# ---- Mutants ----------------------------------------------------------------------------
.PHONY: mutants
mutants: $(if $(HAVE_SOLUTIONS),deps) ## apply each classic bug in tests/mutants/ and require the tests to catch it
	$(INSTRUCTOR_ONLY)
	@$(MAKE) --no-print-directory -s grader
	@tools/mutants $(ACTIVE)

# The sweep writes every single-site mutation of the solutions' wake-ups
# (dropped signal or broadcast, broadcast turned signal, while turned if,
# the wrong condition variable) as patches, and runs them as mutants.
.PHONY: sweep
sweep: $(if $(HAVE_SOLUTIONS),deps) ## apply every single-site wake-up mutation (tools/wakeup-sweep); report the survivors
	$(INSTRUCTOR_ONLY)
	@$(MAKE) --no-print-directory -s grader
	@rm -rf build/sweep/patches && tools/wakeup-sweep build/sweep/patches $(ACTIVE)
	@MUTANT_DIR=build/sweep/patches MUTANT_WORK=build/sweep/work tools/mutants $(ACTIVE)

# The atomicity sweep moves each unlock of the reference above the statement
# before it and splits each critical section after each statement, grades
# every such mutant as make grade does, and requires each to lose points
# outside the race-free line or be argued in tests/mutants/EQUIVALENT.md.
.PHONY: atomicity
atomicity: $(if $(HAVE_SOLUTIONS),deps) ## grade every unlock-early and split-section mutation (tools/atomicity-sweep); report the survivors
	$(INSTRUCTOR_ONLY)
	@tools/atomicity-sweep build/atomicity $(filter-out 07-distributed-workers,$(ACTIVE))

# ---- Exploration ------------------------------------------------------------------------
# The exploration tests run one thread at a time under the controlled
# scheduler (grader/explorer/kit_sched.c) and search the interleavings; their
# seeds are fixed, so make test and make grade give the same verdict every
# run. make explore runs them longer, with other seeds, or replays a token.
# SUBMISSION=dir explores that submission, as make grade and make debug do.
SCHEDULES ?=
STRATEGY ?=
REPLAY ?=
EXPLORE_IMPL = $(if $(SUBMISSION),$(GRADE_IMPL),$(IMPL))
EXPLORE_BIN = $(call out_root,$(EXPLORE_IMPL))$(if $(SAN),/$(SAN))/tests
EXPLORE_REPORT := build/explore
# A SUBMISSION is staged, built and run confined, as make grade does.
explore_confinement = $(CONFINE) --kit $(CURDIR) --ro $(abspath $(EXPLORE_BIN)) \
  --ro-at $(abspath $(EXPLORE_REPORT)/stage) $(abspath $(GRADE_IMPL)) --memory 4096 --tasks 256 --
.PHONY: explore
explore: $(if $(HAVE_SOLUTIONS),deps) ## search more interleavings: make explore CH=NN [SCHEDULES=N] [STRATEGY=pct:SEED:DEPTH] [TEST=name [SCENARIO=N] REPLAY=token]
	@echo "Exploring $(EXPLORE_IMPL)"
	@$(MAKE) --no-print-directory -s grader
	@$(if $(SUBMISSION),$(call stage_submission,$(EXPLORE_REPORT)) && ! cat $(EXPLORE_REPORT)/gate/*.txt 2>/dev/null)
	@$(if $(SUBMISSION),$(CONFINE) --slot --) $(MAKE) --no-print-directory -s -j$(JOBS) \
	  $(if $(SUBMISSION),$(call submission_build,$(EXPLORE_REPORT)),IMPL=$(EXPLORE_IMPL)) tests-bin
	@SCHEDULES="$(SCHEDULES)" STRATEGY="$(STRATEGY)" REPLAY="$(REPLAY)" TEST="$(TEST)" KIT_SCENARIO="$(SCENARIO)" \
	  KIT_MAKE_ARGS='$(DEBUG_ARGS)' KIT_RUN_PREFIX='$(if $(SUBMISSION),$(explore_confinement))' \
	  tools/explore $(EXPLORE_BIN) $(ACTIVE)

# ---- Benchmarks -------------------------------------------------------------------------
# tests/bench/ is built by `make bench` only. It links the reference solutions
# of the chapters it measures, libkit, and GLib - the peer it is measured
# against; nothing else in the kit links GLib. GLib's headers are included
# with -isystem: the kit's warnings are for the kit's code, not GLib's.
# (-lm: chapter 04's sizing.c, linked in for chapter 06, uses <math.h>.)
# Chapter 08's lock is measured against glibc's own pthread_rwlock_t.
# A benchmark is registered in one place, a line of tests/bench/bench_list.h:
# BENCHMARK(only, function, "chapters"). The chapters it links are read from
# there, each with the earlier chapters it uses.
BENCH := build/bench/kit-bench
BENCH_SRCS := $(wildcard tests/bench/*.c)
BENCH_LISTED := $(shell sed -n 's/^BENCHMARK([^,]*,[^,]*, *"\([^"]*\)").*/\1/p' tests/bench/bench_list.h 2>/dev/null)
BENCH_CHAPTERS := $(sort $(BENCH_LISTED) $(foreach c,$(BENCH_LISTED),$(ch$(call number,$(c))_uses)))
GLIB_CFLAGS = $(patsubst -I%,-isystem %,$(shell pkg-config --cflags glib-2.0))
GLIB_LIBS = $(shell pkg-config --libs glib-2.0)

$(OUT)/obj/bench/%.o: tests/bench/%.c $(FLAGS_STAMP)
	@mkdir -p $(@D)
	$(call say,CC,$<)$(CC) $(KIT_CFLAGS) $(INCLUDES) $(GLIB_CFLAGS) -c $< -o $@

$(BENCH): $(patsubst tests/bench/%.c,$(OUT)/obj/bench/%.o,$(BENCH_SRCS)) \
          $(foreach c,$(BENCH_CHAPTERS),$(call impl_objs,$(c))) $(KITLIB) \
          $(COMMON)/grader/explorer/kit_sched_context.o # (the explorer's switch, timed)
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CC) $(CFLAGS) $^ -o $@ $(GLIB_LIBS) -lm $(LDLIBS)

.PHONY: bench
# Exit status 1 when a run went wrong or a target was missed. The output is
# kept in build/bench/output.txt, from which `tools/regenerate bench` writes
# the run onto docs/performance.md.
bench: ## measure the kit against GLib and glibc: medians and ratios, build/bench/results.json; fails on a missed target
	$(INSTRUCTOR_ONLY)
	@tools/bootstrap bench
	@$(MAKE) --no-print-directory -j$(JOBS) IMPL=solutions SAN= $(BENCH) tests-bin # (the explorer's lines run the tests)
	@$(MAKE) --no-print-directory -j$(JOBS) IMPL=solutions SAN= OUT=build/bench-explorer \
	  $(foreach c,$(CHAPTER_DIRS),ch$(call number,$(c))_judged=) tests-bin # (... and the explorer alone, in one process)
	@set -o pipefail; $(BENCH) | tee build/bench/output.txt

# ---- Docs -------------------------------------------------------------------------------
# A timeline is a run on the clock, which never draws the same picture twice:
# without CH, only the timelines not drawn yet are drawn; CH=NN redraws that
# chapter's pictures, timelines included, and nobody else's.
.PHONY: regenerate
regenerate: ## redraw the pages' pictures (CH=NN: that chapter's), rewrite the generated pages and output examples, to be committed
	$(INSTRUCTOR_ONLY)
	@$(MAKE) --no-print-directory -s programs
	@tools/regenerate $(if $(strip $(CH)),$(addprefix --chapter ,$(SELECTED)))

.PHONY: docs
docs: deps ## the Doxygen site in build/docs/html (zero warnings)
	@tools/make-docs

# ---- Distribution -----------------------------------------------------------------------
.PHONY: dist-student
dist-student: ## build/dist/concurrency-kit-student.tar.gz: the kit without solutions (CHAPTERS="01 02": those chapters only)
	@tools/dist-student

.PHONY: gradescope
gradescope: ## build/dist/gradescope-autograder.zip: an autograder for Gradescope, of CH (or every chapter)
	$(INSTRUCTOR_ONLY)
	@tools/gradescope/build "$(strip $(SELECTED))"

# PL_IMAGE: the grader image PrairieLearn pulls (built from the Dockerfile
# make prairielearn writes beside the course's files, and pushed).
PL_IMAGE ?= concurrency-kit-grader
.PHONY: prairielearn
prairielearn: ## build/dist/prairielearn/: the kit as a PrairieLearn external grader, a question per chapter of CH
	$(INSTRUCTOR_ONLY)
	@tools/prairielearn/build "$(strip $(SELECTED))" "$(PL_IMAGE)"

# Shell scripts pass shellcheck; the editor files are valid JSON;
# compile_commands.json covers every compiled file.
SHELL_SCRIPTS = $(shell grep -l -s -E '^#!/usr/bin/env bash|^#!/bin/(ba)?sh' tools/* tools/gradescope/* tools/prairielearn/* tools/slurm/*)
.PHONY: lint
lint: ## shellcheck on every script, the editor files, compile_commands.json, the layers of the code, the pages' tags, no solution code on the pages, each chapter's parts
	@command -v shellcheck >/dev/null || { echo "make lint needs shellcheck: sudo apt-get install shellcheck"; exit 1; }
	@shellcheck $(SHELL_SCRIPTS) && echo "shellcheck: $(words $(SHELL_SCRIPTS)) scripts clean"
	@for f in .vscode/*.json; do python3 -m json.tool "$$f" >/dev/null || { echo "$$f is not valid JSON"; exit 1; }; done
	@$(MAKE) --no-print-directory -s compile_commands.json && tools/check-compile-commands
	@tools/check-layers
	@$(if $(call objects_named,/grader/subject/ /kit_sched.o /kit_sched_ /kit_scenario_run.o /obj/,$(JUDGE_OBJS)),echo "a judge links the subject's side: $(call objects_named,/grader/subject/ /kit_sched.o /kit_sched_ /kit_scenario_run.o /obj/,$(JUDGE_OBJS))"; exit 1,echo "check-judge: no judge links an object of the subject's side or of a submission ($(words $(JUDGE_OBJS)) objects)")
	@$(if $(call objects_named,/grader/subject/ /obj/ /dmw_subject.o,$(PROCESS_JUDGE_OBJS)),echo "a judge of processes links the subject's side: $(call objects_named,/grader/subject/ /obj/ /dmw_subject.o,$(PROCESS_JUDGE_OBJS))"; exit 1,echo "check-judge: no judge of processes links an object of the subject's side or of a submission ($(words $(PROCESS_JUDGE_OBJS)) objects)")
	@tools/check-page-tags && echo "check-page-tags: every page names the tags it cites and shows none of their lines, and sends no one to the reference's files"
	@tools/check-copied-code
	@$(if $(HAVE_SOLUTIONS),tools/check-chapter --all --quiet && echo "check-chapter: every chapter has the parts docs/instructors.md lists (tools/check-chapter NN says more)")

.PHONY: clean help help-student help-kit
clean: ## remove build/
	rm -rf build

help: ## this list
	@$(if $(HAVE_SOLUTIONS),$(MAKE) --no-print-directory help-kit,$(MAKE) --no-print-directory help-student)

help-student:
	@echo "Concurrency Patterns in C - the student kit"
	@echo "  make run CH=NN        build chapter NN's program on your code and run it"
	@echo "  make grade CH=NN      score your code for chapter NN (no CH: every chapter, then where you stand)"
	@echo "  make debug CH=NN TEST=name   one test under gdb, as make grade names it: stops where it fails,"
	@echo "                        crashes or hangs (Ctrl-C), on the line of the test or of your code"
	@echo "  make explore CH=NN [SCHEDULES=N]   search more interleavings of your code (TEST=name [SCENARIO=N] REPLAY=token"
	@echo "                        replays one, as a failure prints it)"
	@echo "  make tsan CH=NN       grade your code with the race-free line earned under ThreadSanitizer, on real"
	@echo "                        threads: a race it reports shows both accesses"
	@echo "  make docs             the pages, in build/docs/html/index.html"
	@echo "  make all              build every program and test of your code"
	@echo "  make deps             install what grading and the docs need"
	@echo "  make clean            remove build/"
	@echo
	@echo "Variables: CH=NN (one chapter)  EARLIER=mine (link your own earlier chapters, not the reference)"
	@echo "           TIMEOUT=seconds per test  CC=clang  SAN=tsan (debug: the ThreadSanitizer build)"
	@echo "           SUBMISSION=dir (grade, debug, explore: a copy of your exercises/ folder kept elsewhere)"

help-kit:
	@echo "Concurrency Patterns in C - make targets"
	@echo
	@echo "For students (your code is in exercises/):"
	@$(call help_lines,run grade debug explore docs)
	@echo
	@echo "For instructors:"
	@$(call help_lines,test grade grade-all gradebook similarity tsan asan valgrind stress mutants sweep atomicity explore hardening feedback dist-student gradescope prairielearn bench)
	@echo
	@echo "For maintainers:"
	@$(call help_lines,all programs tests-bin smoke lint regenerate deps clean help)
	@echo
	@echo "Variables:"
	@echo "  CH=NN            one chapter (CH=3, CH=03, CH=\"01 02\" or CH=03-thread-pool); none: all"
	@echo "  IMPL=DIR         what to build: solutions (the default here), exercises, or a folder like them"
	@echo "  SUBMISSION=DIR   grade a student's folder of NN-name/ folders, or a whole kit"
	@echo "  EARLIER=mine     link IMPL's own earlier chapters, not the reference"
	@echo "  TIMEOUT=S        seconds a test may run when graded ($(TIMEOUT))"
	@echo "  JOBS=N           builds and gradings at once ($(JOBS))"
	@echo "  SUBMISSIONS=DIR  grade-all: a folder of submissions"
	@echo "  SHARD=k/N        grade-all: grade share k of N of the class (tools/slurm/submit: a Slurm array)"
	@echo "  ONLY=name        grade-all: regrade that student's folder alone"
	@echo "  ROSTER=FILE      grade-all, gradebook: the roster (folder,id,name,email): the Canvas and Moodle exports"
	@echo "  CANVAS_IDS=...   gradebook: each chapter's Canvas assignment (CANVAS_IDS=\"01=4757 03=4760\")"
	@echo "  SIMILAR=PERCENT  similarity: flag a pair from this share of shared code ($(SIMILAR))"
	@echo "  CHAPTERS=\"NN ..\" dist-student: hand out these chapters only"
	@echo "  PL_IMAGE=NAME    prairielearn: the grader image PrairieLearn pulls ($(PL_IMAGE))"
	@echo "  AUTOLAB=1        grade: also print an Autolab score line"
	@echo "  CHAOS=SEED       grade: perturb every lock, wait and signal, replayably"
	@echo "  REPEAT=N         stress: runs of the suite ($(REPEAT))"
	@echo "  HOGS=N           stress: CPU hogs competing with the tests (one per core)"
	@echo "  SEED=N           grade, debug: the seed of the stress tests' data and of every test's schedule"
	@echo "  REAL_THREADS=1   grade, debug, mutants: run every test on real threads, none on one schedule"
	@echo "  SAN=tsan|asan    build a sanitizer variant (debug: SAN=tsan debugs the ThreadSanitizer build)"
	@echo "  CC=clang CFLAGS=...  the compiler and its flags"
	@echo "  TEST=name        debug: the test to run under gdb; explore: the one test to run"
	@echo "  SCHEDULES=N      explore: schedules per strategy (the tests' own budget by default)"
	@echo "  STRATEGY=S       explore: random:SEED, pct:SEED:DEPTH, dfs:BOUND (several: space-separated)"
	@echo "  REPLAY=TOKEN     explore: replay the schedule a failure printed (with TEST=name)"
	@echo "  V=1              print every build command in full"

# One line a target, from the `## ` comment on its rule in this Makefile.
help_lines = for t in $(1); do sed -n -E "s/^$$t:.*\#\# (.*)/  $$t\t\1/p" Makefile | head -1; done | expand -t 18
