/*
 * problems.c - the problem strings every probe and reader of the inventory collects.
 *
 * The one idea: a problem says, in words, why a fact is unknown or does not add up; the list
 * is capped (TAU_AGENT_MAX_PROBLEMS, each at most TAU_AGENT_PROBLEM_MAX bytes) and keeps
 * each text once, in the order added.  A probe's single "why not" note is set the same way.
 */
#include "hostprobe.h"

#include "tau/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int problem_store(tau_agent_problem_list *list, const char *text)
{
	char *copy;

	for (size_t i = 0; i < list->n; i++)
		if (strcmp(list->items[i], text) == 0)
			return 0;
	if (list->n < TAU_AGENT_MAX_PROBLEMS) {
		copy = strdup(text);
		if (copy == NULL) {
			list->not_shown++;
			return tau_error_set(TAU_ENOMEM, "out of memory recording a problem");
		}
		list->items[list->n++] = copy;
		return 0;
	}
	/* Full: the last slot becomes a count of what is not shown, itself included. */
	if (list->not_shown == 0)
		list->not_shown = 1;
	list->not_shown++;
	{
		char summary[64];

		snprintf(summary, sizeof(summary), "%zu more problems not shown", list->not_shown);
		copy = strdup(summary);
		if (copy == NULL)
			return tau_error_set(TAU_ENOMEM, "out of memory recording a problem");
		free(list->items[TAU_AGENT_MAX_PROBLEMS - 1]);
		list->items[TAU_AGENT_MAX_PROBLEMS - 1] = copy;
	}
	return 0;
}

int tau_agent_problem_addv(tau_agent_problem_list *list, const char *fmt, va_list ap)
{
	char text[TAU_AGENT_PROBLEM_MAX];

	vsnprintf(text, sizeof(text), fmt, ap);
	return problem_store(list, text);
}

int tau_agent_problem_add(tau_agent_problem_list *list, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = tau_agent_problem_addv(list, fmt, ap);
	va_end(ap);
	return rc;
}

int tau_agent_problem_add_text(tau_agent_problem_list *list, const char *text)
{
	return tau_agent_problem_add(list, "%s", text);
}

void tau_agent_problem_list_free(tau_agent_problem_list *list)
{
	if (list == NULL)
		return;
	for (size_t i = 0; i < list->n; i++)
		free(list->items[i]);
	memset(list, 0, sizeof(*list));
}

bool tau_agent_problem_list_has(const tau_agent_problem_list *list, const char *text)
{
	for (size_t i = 0; i < list->n; i++)
		if (strcmp(list->items[i], text) == 0)
			return true;
	return false;
}

int tau_agent_problem_list_copy(tau_agent_problem_list *dst, const tau_agent_problem_list *src)
{
	tau_agent_problem_list_free(dst);
	for (size_t i = 0; i < src->n; i++) {
		dst->items[i] = strdup(src->items[i]);
		if (dst->items[i] == NULL)
			return tau_error_set(TAU_ENOMEM, "out of memory");
		dst->n++;
	}
	dst->not_shown = src->not_shown;
	return 0;
}

void tau_agent_note_set(char **note, const char *fmt, ...)
{
	char text[TAU_AGENT_PROBLEM_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	free(*note);
	*note = strdup(text);
}
