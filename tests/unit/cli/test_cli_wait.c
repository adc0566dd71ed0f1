/*
 * test_cli_wait.c - the poll loop of the waiting `tau` commands (cli/wait.c):
 * the look's answer ends the wait, a timeout of 0 looks once, the deadline
 * ends a wait that never comes, and the note runs only before another look.
 */
#include "wait.h"

#include "tau/clock.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

typedef struct probe {
	int looks, notes;
	int answer_at; /* the look that answers (1-based); 0: never */
	int answer;
} probe;

static int look(void *arg)
{
	probe *p = arg;

	p->looks++;
	return p->answer_at != 0 && p->looks == p->answer_at ? p->answer : 0;
}

static void note(void *arg)
{
	((probe *)arg)->notes++;
}

static void test_answer_ends_the_wait(void **state)
{
	probe came = {.answer_at = 3, .answer = 1}, never = {.answer_at = 2, .answer = -1};

	(void)state;
	assert_int_equal(tau_cli_wait(look, note, &came, 60000, 1), 1);
	assert_int_equal(came.looks, 3);
	assert_int_equal(came.notes, 2); /* before the 2nd and 3rd look, not after the last */
	assert_int_equal(tau_cli_wait(look, NULL, &never, 60000, 1), -1);
	assert_int_equal(never.looks, 2);
}

static void test_no_timeout_looks_once(void **state)
{
	probe p = {0}, q = {.answer_at = 1, .answer = 1};

	(void)state;
	assert_int_equal(tau_cli_wait(look, note, &p, 0, 1), 0);
	assert_int_equal(p.looks, 1);
	assert_int_equal(p.notes, 0);
	assert_int_equal(tau_cli_wait(look, note, &q, -5, 1), 1);
	assert_int_equal(q.looks, 1);
}

static void test_deadline_ends_a_wait_that_never_comes(void **state)
{
	probe p = {0};
	uint64_t t0 = tau_clock_mono_ms(), took;

	(void)state;
	assert_int_equal(tau_cli_wait(look, note, &p, 50, 10), 0);
	took = tau_clock_mono_ms() - t0;
	assert_true(took >= 50);
	assert_true(p.looks >= 2);
	assert_int_equal(p.notes, p.looks - 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_answer_ends_the_wait),
	        cmocka_unit_test(test_no_timeout_looks_once),
	        cmocka_unit_test(test_deadline_ends_a_wait_that_never_comes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
