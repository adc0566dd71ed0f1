/* Unit tests of the capped growable buffer and the capped whole-file read. */
#include "tau/buf.h"
#include "tau/error.h"
#include "tau/file.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

static void test_append_and_printf(void **state)
{
	tau_buf b = TAU_BUF_INIT(0);
	char big[2000];

	(void)state;
	assert_int_equal(tau_buf_append_str(&b, "ab"), 0);
	assert_int_equal(tau_buf_printf(&b, "-%d-", 42), 0);
	assert_string_equal(b.p, "ab-42-");
	assert_int_equal(b.len, 6);
	/* Longer than printf's stack scratch space. */
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(tau_buf_printf(&b, "%s", big), 0);
	assert_int_equal(b.len, 6 + sizeof(big) - 1);
	assert_int_equal(b.p[b.len], '\0');
	tau_buf_consume(&b, 6);
	assert_int_equal(b.len, sizeof(big) - 1);
	assert_int_equal(b.p[0], 'x');
	tau_buf_truncate(&b, 3);
	assert_string_equal(b.p, "xxx");
	tau_buf_truncate(&b, 10);
	assert_int_equal(b.len, 3);
	tau_buf_consume(&b, 99999);
	assert_int_equal(b.len, 0);
	assert_string_equal(b.p, "");
	tau_buf_free(&b);
	assert_null(b.p);
	tau_buf_free(NULL);
}

static void test_cap_is_sticky(void **state)
{
	tau_buf b = TAU_BUF_INIT(4);

	(void)state;
	assert_int_equal(tau_buf_append(&b, "abcd", 4), 0);
	assert_int_equal(tau_buf_append(&b, "e", 1), -TAU_ETOOBIG);
	assert_string_equal(tau_error_last()->msg, "more than 4 bytes");
	/* What it held stays; later appends fail with the first error. */
	assert_string_equal(b.p, "abcd");
	assert_int_equal(tau_buf_error(&b), -TAU_ETOOBIG);
	assert_int_equal(tau_buf_append(&b, "", 0), -TAU_ETOOBIG);
	assert_int_equal(tau_buf_printf(&b, "x"), -TAU_ETOOBIG);
	tau_buf_free(&b);
	assert_int_equal(tau_buf_error(&b), 0);
	assert_int_equal(b.max, 4);
}

static void test_take(void **state)
{
	tau_buf b = TAU_BUF_INIT(16);
	size_t len = 99;
	char *s = tau_buf_take(&b, &len);

	(void)state;
	/* Nothing appended still gives a string. */
	assert_non_null(s);
	assert_string_equal(s, "");
	assert_int_equal(len, 0);
	free(s);
	assert_int_equal(tau_buf_append_str(&b, "hello"), 0);
	s = tau_buf_take(&b, NULL);
	assert_string_equal(s, "hello");
	assert_null(b.p);
	assert_int_equal(b.len, 0);
	free(s);
}

static char dir[64];

static int make_dir(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/tau-test-buf-XXXXXX");
	return mkdtemp(dir) == NULL ? -1 : 0;
}

static int remove_dir(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_file_read(void **state)
{
	char path[128], *text = NULL;
	size_t len = 0;

	(void)state;
	snprintf(path, sizeof(path), "%s/token", dir);
	write_file(path, "secret\n");
	assert_int_equal(tau_file_read(&text, &len, path, 64, "token file"), 0);
	assert_string_equal(text, "secret\n");
	assert_int_equal(len, 7);
	free(text);
	text = NULL;

	/* Exactly the cap is fine. */
	assert_int_equal(tau_file_read(&text, NULL, path, 7, NULL), 0);
	free(text);
	text = NULL;

	/* An empty file is an empty string, not NULL. */
	write_file(path, "");
	assert_int_equal(tau_file_read(&text, &len, path, 64, "token file"), 0);
	assert_string_equal(text, "");
	assert_int_equal(len, 0);
	free(text);
}

static void test_file_read_errors(void **state)
{
	char path[128], want[256], *text = NULL;
	size_t len = 42;

	(void)state;
	snprintf(path, sizeof(path), "%s/big", dir);
	write_file(path, "0123456789");
	assert_int_equal(tau_file_read(&text, &len, path, 9, "CA file"), -TAU_ETOOBIG);
	snprintf(want, sizeof(want), "CA file %s is larger than 9 bytes", path);
	assert_string_equal(tau_error_last()->msg, want);
	assert_null(text);
	assert_int_equal(len, 42);

	snprintf(path, sizeof(path), "%s/missing", dir);
	assert_int_equal(tau_file_read(&text, &len, path, 9, "CA file"), -TAU_EIO);
	snprintf(want, sizeof(want), "cannot read CA file %s: No such file or directory", path);
	assert_string_equal(tau_error_last()->msg, want);

	/* A directory opens but does not read. */
	assert_int_equal(tau_file_read(&text, &len, dir, 9, NULL), -TAU_EIO);
	snprintf(want, sizeof(want), "cannot read file %s: Is a directory", dir);
	assert_string_equal(tau_error_last()->msg, want);
	assert_null(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_append_and_printf),
	        cmocka_unit_test(test_cap_is_sticky),
	        cmocka_unit_test(test_take),
	        cmocka_unit_test(test_file_read),
	        cmocka_unit_test(test_file_read_errors),
	};
	return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
