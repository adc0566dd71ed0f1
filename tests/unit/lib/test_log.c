/* Unit tests of the structured logger. */
#define _POSIX_C_SOURCE 200809L
#include "tau/error.h"
#include "tau/log.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

static char *capture_buf;
static size_t capture_len;
static FILE *capture;

static int setup(void **state)
{
	(void)state;
	capture = open_memstream(&capture_buf, &capture_len);
	tau_log_set_stream(capture);
	tau_log_set_level(TAU_LOG_INFO);
	tau_log_set_format(TAU_LOG_FORMAT_LOGFMT);
	return capture == NULL ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	tau_log_set_stream(NULL);
	fclose(capture);
	free(capture_buf);
	capture_buf = NULL;
	return 0;
}

static const char *captured(void)
{
	fflush(capture);
	return capture_buf;
}

static void test_logfmt_line(void **state)
{
	const char *out;

	(void)state;
	tau_log_info("agent connected", "node", "gpu-1", "reason", "first report", NULL);
	out = captured();
	assert_true(strncmp(out, "ts=", 3) == 0);
	assert_non_null(strstr(out, " level=info msg=\"agent connected\" node=gpu-1 "
	                            "reason=\"first report\"\n"));
	/* exactly one line */
	assert_ptr_equal(strchr(out, '\n'), out + strlen(out) - 1);
}

static void test_escaping(void **state)
{
	(void)state;
	tau_log_warn("x", "v", "a\"b\\c\nd=e", "empty", "", "nullv", NULL, NULL);
	assert_non_null(strstr(captured(), "v=\"a\\\"b\\\\c\\nd=e\" empty=\"\" nullv=\"\"\n"));
}

static void test_invalid_utf8_escaped(void **state)
{
	(void)state;
	/* A stray 0xff and a cut 2-byte sequence are escaped; a valid e-acute stays as it is. */
	tau_log_warn("x", "v", "a\xff\xc3 \xc3\xa9", NULL);
	assert_non_null(strstr(captured(), "v=\"a\\u00ff\\u00c3 \xc3\xa9\"\n"));
}

static void test_level_filter(void **state)
{
	(void)state;
	tau_log_debug("hidden", NULL);
	assert_true(capture_len == 0 || captured()[0] == '\0');
	tau_log_set_level(TAU_LOG_DEBUG);
	tau_log_debug("shown", NULL);
	assert_non_null(strstr(captured(), "level=debug msg=shown"));
	tau_log_set_level(TAU_LOG_OFF);
	assert_false(tau_log_enabled(TAU_LOG_ERROR));
}

static void test_json_format(void **state)
{
	cJSON *line;

	(void)state;
	tau_log_set_format(TAU_LOG_FORMAT_JSON);
	tau_log_error("write failed", "object", "ns/\"q\"", NULL);
	line = cJSON_Parse(captured());
	assert_non_null(line);
	assert_string_equal(cJSON_GetObjectItem(line, "level")->valuestring, "error");
	assert_string_equal(cJSON_GetObjectItem(line, "msg")->valuestring, "write failed");
	assert_string_equal(cJSON_GetObjectItem(line, "object")->valuestring, "ns/\"q\"");
	cJSON_Delete(line);
}

static void test_oversized_line_truncated_and_still_valid(void **state)
{
	char *big = malloc(20000);
	cJSON *line;

	(void)state;
	memset(big, '\\', 19999);
	big[19999] = '\0';
	tau_log_set_format(TAU_LOG_FORMAT_JSON);
	tau_log_info("big", "v", big, NULL);
	line = cJSON_Parse(captured());
	assert_non_null(line);
	assert_string_equal(cJSON_GetObjectItem(line, "truncated")->valuestring, "true");
	cJSON_Delete(line);
	free(big);
}

static void test_parse_names(void **state)
{
	tau_log_level l;
	tau_log_format f;

	(void)state;
	assert_int_equal(tau_log_level_parse(&l, "WARNING"), 0);
	assert_int_equal(l, TAU_LOG_WARN);
	assert_int_equal(tau_log_level_parse(&l, "debug"), 0);
	assert_int_equal(l, TAU_LOG_DEBUG);
	assert_int_equal(tau_log_level_parse(&l, "verbose"), -TAU_EINVAL);
	assert_non_null(strstr(tau_error_last()->msg, "verbose"));
	assert_int_equal(tau_log_format_parse(&f, "json"), 0);
	assert_int_equal(f, TAU_LOG_FORMAT_JSON);
	assert_int_equal(tau_log_format_parse(&f, "xml"), -TAU_EINVAL);
	assert_string_equal(tau_log_level_name(TAU_LOG_ERROR), "error");
}

static void test_env(void **state)
{
	(void)state;
	setenv("TAU_LOG_LEVEL", "error", 1);
	setenv("TAU_LOG_FORMAT", "json", 1);
	assert_int_equal(tau_log_init_from_env(), 0);
	assert_int_equal(tau_log_get_level(), TAU_LOG_ERROR);
	setenv("TAU_LOG_LEVEL", "loud", 1);
	assert_int_equal(tau_log_init_from_env(), -TAU_EINVAL);
	assert_int_equal(tau_log_get_level(), TAU_LOG_ERROR);
	unsetenv("TAU_LOG_LEVEL");
	unsetenv("TAU_LOG_FORMAT");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_logfmt_line, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_escaping, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_invalid_utf8_escaped, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_level_filter, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_json_format, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_oversized_line_truncated_and_still_valid,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(test_parse_names, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_env, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
