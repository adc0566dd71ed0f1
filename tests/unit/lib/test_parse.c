/* Unit tests of the operator-input parsers: durations, whole numbers, booleans, listen addresses.
 */
#include "tau/error.h"
#include "tau/parse.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#define DAY_MS (24 * 3600 * 1000LL)

static int64_t dur(const char *text)
{
	int64_t v = -1;

	if (tau_parse_duration_ms(&v, "--d", text, 0, INT64_MAX) < 0)
		fail_msg("%s: %s", text, tau_error_last()->msg);
	return v;
}

static void refused(const char *text, int64_t min, int64_t max, const char *msg)
{
	int64_t v = 12345;

	assert_int_equal(tau_parse_duration_ms(&v, "--d", text, min, max), -TAU_EINVAL);
	assert_string_equal(tau_error_last()->msg, msg);
	assert_int_equal(v, 12345);
}

static void test_durations(void **state)
{
	(void)state;
	assert_int_equal(dur("500ms"), 500);
	assert_int_equal(dur("60s"), 60000);
	assert_int_equal(dur("60"), 60000);
	assert_int_equal(dur("0.25"), 250);
	assert_int_equal(dur("1.5s"), 1500);
	assert_int_equal(dur("2m"), 120000);
	assert_int_equal(dur("1h"), 3600000);
	assert_int_equal(dur("1h30m"), 5400000);
	assert_int_equal(dur("1m0.5s"), 60500);
	assert_int_equal(dur("0.5h"), 1800000);
	assert_int_equal(dur("1.9ms"), 1);
	assert_int_equal(dur("0"), 0);
	assert_int_equal(dur(".5s"), 500);
	assert_int_equal(dur("1.123456789123s"), 1123);
}

static void test_bad_durations(void **state)
{
	(void)state;
	refused("nan", 0, DAY_MS, "--d nan: not a duration (e.g. 500ms, 60s, 2m, 1h30m)");
	refused("inf", 0, DAY_MS, "--d inf: not a duration (e.g. 500ms, 60s, 2m, 1h30m)");
	refused("1e300", 0, DAY_MS, "--d 1e300: not a duration (e.g. 500ms, 60s, 2m, 1h30m)");
	refused("0x10", 0, DAY_MS, "--d 0x10: not a duration (e.g. 500ms, 60s, 2m, 1h30m)");
	refused("5 s", 0, DAY_MS, "--d 5 s: not a duration (e.g. 500ms, 60s, 2m, 1h30m)");
	refused(" 5s", 0, DAY_MS, "--d  5s: not a duration (e.g. 500ms, 60s, 2m, 1h30m)");
	refused("5sx", 0, DAY_MS, "--d 5sx: not a duration (e.g. 500ms, 60s, 2m, 1h30m)");
	refused("5d", 0, DAY_MS, "--d 5d: not a duration (e.g. 500ms, 60s, 2m, 1h30m)");
	refused("1m30", 0, DAY_MS, "--d 1m30: not a duration (e.g. 500ms, 60s, 2m, 1h30m)");
	refused("s", 0, DAY_MS, "--d s: not a duration (e.g. 500ms, 60s, 2m, 1h30m)");
	refused(".", 0, DAY_MS, "--d .: not a duration (e.g. 500ms, 60s, 2m, 1h30m)");
	refused("-1s", 0, DAY_MS, "--d -1s: must not be negative");
	refused("", 0, DAY_MS, "--d: empty; expected a duration such as 60s");
	refused(NULL, 0, DAY_MS, "--d: empty; expected a duration such as 60s");
	refused("25h", 0, DAY_MS, "--d 25h: out of range (0s..24h)");
	refused("999s", 1000, 60000, "--d 999s: out of range (1s..1m)");
	refused("999ms", 1000, 60000, "--d 999ms: out of range (1s..1m)");
	refused("99999999999999999999s", 0, DAY_MS,
	        "--d 99999999999999999999s: out of range (0s..24h)");
	/* Each product and the sum are checked, not only the digits. */
	refused("9223372036854775807h", 0, INT64_MAX,
	        "--d 9223372036854775807h: out of range (0s..9223372036854775807ms)");
	refused("9223372036854775s9223372036854775s", 0, INT64_MAX,
	        "--d 9223372036854775s9223372036854775s: out of range (0s..9223372036854775807ms)");
}

static void test_format_duration(void **state)
{
	char b[32];

	(void)state;
	assert_string_equal(tau_format_duration_ms(b, sizeof(b), 0), "0s");
	assert_string_equal(tau_format_duration_ms(b, sizeof(b), 200), "200ms");
	assert_string_equal(tau_format_duration_ms(b, sizeof(b), 90000), "90s");
	assert_string_equal(tau_format_duration_ms(b, sizeof(b), 300000), "5m");
	assert_string_equal(tau_format_duration_ms(b, sizeof(b), 7200000), "2h");
}

static void test_int64(void **state)
{
	int64_t v = 7;
	int i = 7;

	(void)state;
	assert_int_equal(tau_parse_int64(&v, "--n", "42", 0, 100), 0);
	assert_int_equal(v, 42);
	assert_int_equal(tau_parse_int64(&v, "--n", "-9223372036854775808", INT64_MIN, 0), 0);
	assert_true(v == INT64_MIN);
	assert_int_equal(tau_parse_int64(&v, "--n", "9223372036854775807", 0, INT64_MAX), 0);
	assert_true(v == INT64_MAX);
	v = 7;
	assert_int_equal(tau_parse_int64(&v, "--n", "9223372036854775808", 0, INT64_MAX),
	                 -TAU_EINVAL);
	assert_string_equal(tau_error_last()->msg,
	                    "--n 9223372036854775808: out of range (0..9223372036854775807)");
	assert_int_equal(tau_parse_int64(&v, "--n", "101", 0, 100), -TAU_EINVAL);
	assert_string_equal(tau_error_last()->msg, "--n 101: out of range (0..100)");
	assert_int_equal(tau_parse_int64(&v, "--n", "-1", 0, 100), -TAU_EINVAL);
	assert_string_equal(tau_error_last()->msg, "--n -1: out of range (0..100)");
	assert_int_equal(tau_parse_int64(&v, "--n", "12abc", 0, 100), -TAU_EINVAL);
	assert_string_equal(tau_error_last()->msg, "--n 12abc: expected a whole number");
	assert_int_equal(tau_parse_int64(&v, "--n", "+1", 0, 100), -TAU_EINVAL);
	assert_int_equal(tau_parse_int64(&v, "--n", " 1", 0, 100), -TAU_EINVAL);
	assert_int_equal(tau_parse_int64(&v, "--n", "-", 0, 100), -TAU_EINVAL);
	assert_int_equal(tau_parse_int64(&v, "--n", "1.5", 0, 100), -TAU_EINVAL);
	assert_int_equal(tau_parse_int64(&v, "--n", "", 0, 100), -TAU_EINVAL);
	assert_string_equal(tau_error_last()->msg, "--n: empty; expected a whole number");
	assert_int_equal(v, 7);
	assert_int_equal(tau_parse_int(&i, "--n", "3000000000", 0, INT32_MAX), -TAU_EINVAL);
	assert_int_equal(i, 7);
	assert_int_equal(tau_parse_int(&i, "--n", "30", 0, 60), 0);
	assert_int_equal(i, 30);
}

static void test_bool(void **state)
{
	bool b = false;

	(void)state;
	assert_int_equal(tau_parse_bool(&b, "TAU_X", "Yes"), 0);
	assert_true(b);
	assert_int_equal(tau_parse_bool(&b, "TAU_X", ""), 0);
	assert_false(b);
	assert_int_equal(tau_parse_bool(&b, "TAU_X", "ON"), 0);
	assert_true(b);
	assert_int_equal(tau_parse_bool(&b, "TAU_X", "off"), 0);
	assert_false(b);
	assert_int_equal(tau_parse_bool(&b, "TAU_X", "maybe"), -TAU_EINVAL);
	assert_string_equal(tau_error_last()->msg, "TAU_X maybe: expected true or false");
}

static void test_listen(void **state)
{
	char host[16];
	int port = -1;

	(void)state;
	assert_int_equal(tau_parse_listen(host, sizeof(host), &port, ":9102"), 0);
	assert_string_equal(host, "");
	assert_int_equal(port, 9102);
	assert_int_equal(tau_parse_listen(host, sizeof(host), &port, "127.0.0.1:0"), 0);
	assert_string_equal(host, "127.0.0.1");
	assert_int_equal(port, 0);
	assert_int_equal(tau_parse_listen(host, sizeof(host), &port, "[::1]:80"), 0);
	assert_string_equal(host, "::1");
	assert_int_equal(port, 80);
	assert_int_equal(tau_parse_listen(host, sizeof(host), &port, "::1:80"), -TAU_EINVAL);
	assert_string_equal(tau_error_last()->msg,
	                    "listen address ::1:80: put an IPv6 address in brackets");
	assert_int_equal(tau_parse_listen(host, sizeof(host), &port, "h:"), -TAU_EINVAL);
	assert_string_equal(tau_error_last()->msg, "listen address h:: port must be 0..65535");
	assert_int_equal(tau_parse_listen(host, sizeof(host), &port, "h:x1"), -TAU_EINVAL);
	assert_int_equal(tau_parse_listen(host, sizeof(host), &port, "h:-0"), -TAU_EINVAL);
	assert_int_equal(tau_parse_listen(host, sizeof(host), &port, "h:65536"), -TAU_EINVAL);
	assert_int_equal(tau_parse_listen(host, sizeof(host), &port, "9102"), -TAU_EINVAL);
	assert_string_equal(tau_error_last()->msg,
	                    "listen address 9102: expected HOST:PORT or :PORT");
	assert_int_equal(tau_parse_listen(host, sizeof(host), &port, "[::1]80"), -TAU_EINVAL);
	assert_int_equal(tau_parse_listen(host, sizeof(host), &port, ""), -TAU_EINVAL);
	assert_int_equal(tau_parse_listen(host, 4, &port, "longhost:1"), -TAU_EINVAL);
	assert_string_equal(tau_error_last()->msg, "listen address longhost:1: host too long");
	assert_int_equal(port, 80);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_durations),
	        cmocka_unit_test(test_bad_durations),
	        cmocka_unit_test(test_format_duration),
	        cmocka_unit_test(test_int64),
	        cmocka_unit_test(test_bool),
	        cmocka_unit_test(test_listen),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
