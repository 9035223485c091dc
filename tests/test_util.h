/* Minimal test support: CHECK macros that report file:line and keep going, and a
 * summary line at the end. A test binary exits non-zero if any check failed. */
#ifndef NCCLBPF_TEST_UTIL_H
#define NCCLBPF_TEST_UTIL_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int test_failures;
static int test_checks;

#define CHECK(cond)                                                                   \
	do {                                                                          \
		test_checks++;                                                        \
		if (!(cond)) {                                                        \
			test_failures++;                                              \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
		}                                                                     \
	} while (0)

#define CHECK_EQ_U64(a, b)                                                            \
	do {                                                                          \
		uint64_t _a = (uint64_t)(a), _b = (uint64_t)(b);                      \
		test_checks++;                                                        \
		if (_a != _b) {                                                       \
			test_failures++;                                              \
			fprintf(stderr, "%s:%d: %s == %s failed: 0x%" PRIx64 " != 0x%" PRIx64 "\n", \
				__FILE__, __LINE__, #a, #b, _a, _b);                  \
		}                                                                     \
	} while (0)

#define CHECK_STR_CONTAINS(hay, needle)                                               \
	do {                                                                          \
		const char *_h = (hay), *_n = (needle);                               \
		test_checks++;                                                        \
		if (!_h || !strstr(_h, _n)) {                                         \
			test_failures++;                                              \
			fprintf(stderr, "%s:%d: expected \"%s\" in \"%s\"\n", __FILE__, __LINE__, \
				_n, _h ? _h : "(null)");                              \
		}                                                                     \
	} while (0)

/* Ends main(): prints "N passed, M failed" for this binary's checks. */
#define TEST_DONE()                                                                   \
	do {                                                                          \
		printf("%d checks: %d passed, %d failed\n", test_checks,              \
		       test_checks - test_failures, test_failures);                   \
		return test_failures ? 1 : 0;                                         \
	} while (0)

#endif
