/*
 * fuzz_watch.c - libFuzzer target for the informers' watch framing
 * (tau/kube_informer.h: tau_kube_watch_split, tau_kube_watch_decode).
 *
 * The first byte picks a chunk size; the rest is a watch response body fed
 * in chunks of that size through a capped tau_buf, exactly as the
 * informer's curl write callback does: split into lines, consume them, keep
 * the tail.  Every line is decoded.  Checked: no line holds a '\n'; the
 * lines, each with its '\n', followed by the tail are the body again; a
 * decoded event has an object, a known type and (ERROR) a decoded Status;
 * a refused line leaves nothing behind.  A broken property aborts.
 */
#include "tau/buf.h"
#include "tau/error.h"
#include "tau/kube_informer.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The informer's cap is 4 MiB; a small one here reaches the overflow path. */
#define LINE_CAP (64u * 1024u)

typedef struct seen {
	tau_buf joined; /* every line with its '\n', to compare with the body */
	size_t lines, events;
} seen;

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_watch: %s (%s)\n", what, tau_error_last()->msg);
	abort();
}

static void on_line(void *arg, const char *line, size_t len)
{
	seen *s = arg;
	tau_kube_watch_event ev;
	int rc;

	if (memchr(line, '\n', len) != NULL)
		fail("a line holds a newline");
	if (tau_buf_append(&s->joined, line, len) < 0 || tau_buf_append(&s->joined, "\n", 1) < 0)
		fail("out of memory");
	s->lines++;
	rc = tau_kube_watch_decode(&ev, line, len);
	if (rc == 1) {
		for (size_t i = 0; i < len; i++)
			if (line[i] != ' ' && line[i] != '\r')
				fail("a line with content was called blank");
		if (ev.object != NULL)
			fail("a blank line left an object");
		return;
	}
	if (rc < 0) {
		if (ev.object != NULL)
			fail("a refused line left an object");
		return;
	}
	if (rc != 0 || ev.object == NULL || !cJSON_IsObject(ev.object))
		fail("a decoded event has no object");
	if (ev.type > TAU_KUBE_WATCH_OTHER)
		fail("a decoded event has an unknown type");
	if (ev.type == TAU_KUBE_WATCH_ERROR) {
		if (ev.error.reason[0] == '\0' || ev.error.message[0] == '\0' ||
		    memchr(ev.error.reason, '\0', sizeof(ev.error.reason)) == NULL ||
		    memchr(ev.error.message, '\0', sizeof(ev.error.message)) == NULL)
			fail("an ERROR event has no reason or message");
	} else if (ev.error.http_code != 0 || ev.error.reason[0] != '\0') {
		fail("a non-ERROR event carries an error");
	}
	s->events++;
	cJSON_Delete(ev.object);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tau_buf body = TAU_BUF_INIT(LINE_CAP);
	seen s = {.joined = TAU_BUF_INIT(0)};
	size_t chunk, fed = 0, consumed_total = 0;

	if (size == 0)
		return 0;
	chunk = (size_t)data[0] % 64 + 1;
	data++;
	size--;
	while (fed < size) {
		size_t n = size - fed < chunk ? size - fed : chunk;
		size_t used;

		if (tau_buf_append(&body, data + fed, n) < 0)
			break; /* the informer ends the stream here (line too long) */
		fed += n;
		used = tau_kube_watch_split(body.p, body.len, on_line, &s);
		if (used > body.len || (used > 0 && body.p[used - 1] != '\n'))
			fail("split consumed past the last newline");
		if (memchr(body.p + used, '\n', body.len - used) != NULL)
			fail("split left a complete line behind");
		tau_buf_consume(&body, used);
		consumed_total += used;
	}
	if (consumed_total + body.len != fed || s.joined.len != consumed_total ||
	    (consumed_total > 0 && memcmp(s.joined.p, data, consumed_total) != 0) ||
	    (body.len > 0 && memcmp(body.p, data + consumed_total, body.len) != 0))
		fail("lines and tail are not the body");
	if (s.events > s.lines)
		fail("more events than lines");
	tau_buf_free(&body);
	tau_buf_free(&s.joined);
	return 0;
}
