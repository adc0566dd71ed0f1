/* Unit tests of the thread-local last error. */
#include "tau/error.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

static void test_set_returns_negative_code(void **state)
{
	(void)state;
	assert_int_equal(tau_error_set(TAU_EINVAL, "bad %s", "x"), -TAU_EINVAL);
	assert_int_equal(tau_error_last()->code, TAU_EINVAL);
	assert_string_equal(tau_error_last()->msg, "bad x");
	/* A negative code is normalised. */
	assert_int_equal(tau_error_set(-TAU_ERANGE, "r"), -TAU_ERANGE);
	assert_int_equal(tau_error_last()->code, TAU_ERANGE);
}

static void test_wrap_prefixes_and_keeps_code(void **state)
{
	(void)state;
	tau_error_set(TAU_ENOTFOUND, "context \"x\" not found");
	assert_int_equal(tau_error_wrap("loading %s", "kubeconfig"), -TAU_ENOTFOUND);
	assert_string_equal(tau_error_last()->msg, "loading kubeconfig: context \"x\" not found");
	tau_error_clear();
	assert_int_equal(tau_error_last()->code, 0);
	assert_string_equal(tau_error_last()->msg, "");
	/* Wrapping nothing is a bug report, not a success. */
	assert_int_equal(tau_error_wrap("ctx"), -TAU_EINTERNAL);
	assert_string_equal(tau_error_last()->msg, "ctx");
}

static void test_long_messages_truncate(void **state)
{
	char big[2000];

	(void)state;
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	tau_error_set(TAU_EINVAL, "%s", big);
	assert_int_equal(strlen(tau_error_last()->msg), TAU_ERROR_MSG_MAX - 1);
	tau_error_wrap("%s", big);
	assert_int_equal(strlen(tau_error_last()->msg), TAU_ERROR_MSG_MAX - 1);
}

static void *other_thread(void *arg)
{
	(void)arg;
	/* A fresh thread starts with no error and its own slot. */
	if (tau_error_last()->code != 0)
		return (void *)1;
	tau_error_set(TAU_EIO, "other");
	return NULL;
}

static void test_thread_local(void **state)
{
	pthread_t t;
	void *ret = (void *)2;

	(void)state;
	tau_error_set(TAU_EPERM, "main");
	assert_int_equal(pthread_create(&t, NULL, other_thread, NULL), 0);
	assert_int_equal(pthread_join(t, &ret), 0);
	assert_null(ret);
	assert_int_equal(tau_error_last()->code, TAU_EPERM);
	assert_string_equal(tau_error_last()->msg, "main");
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(tau_error_name(TAU_EINVAL), "EINVAL");
	assert_string_equal(tau_error_name(-TAU_ETOOBIG), "ETOOBIG");
	assert_string_equal(tau_error_name(0), "OK");
	assert_string_equal(tau_error_name(999), "EUNKNOWN");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_set_returns_negative_code),
	        cmocka_unit_test(test_wrap_prefixes_and_keeps_code),
	        cmocka_unit_test(test_long_messages_truncate),
	        cmocka_unit_test(test_thread_local),
	        cmocka_unit_test(test_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
