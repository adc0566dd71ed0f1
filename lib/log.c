/*
 * log.c - one structured line per event, logfmt or JSON.
 *
 * Each line is formatted into a bounded local buffer and written with a
 * single fwrite under a mutex, so concurrent threads never interleave and
 * a huge value is truncated (and marked) rather than allocated.
 */
#define _POSIX_C_SOURCE 200809L
#include "tau/log.h"

#include "tau/error.h"
#include "tau/json.h"
#include "tau/utf8.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define LINE_MAX_BYTES 8192

static tau_log_level current_level = TAU_LOG_INFO;
static tau_log_format current_format = TAU_LOG_FORMAT_LOGFMT;
static FILE *current_stream;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *const level_names[] = {"debug", "info", "warn", "error", "off"};

int tau_log_level_parse(tau_log_level *out, const char *name)
{
	if (name != NULL) {
		for (int i = TAU_LOG_DEBUG; i <= TAU_LOG_OFF; i++) {
			if (strcasecmp(name, level_names[i]) == 0) {
				*out = (tau_log_level)i;
				return 0;
			}
		}
		if (strcasecmp(name, "warning") == 0) {
			*out = TAU_LOG_WARN;
			return 0;
		}
	}
	return tau_error_set(TAU_EINVAL,
	                     "unknown log level \"%s\" (valid: debug, info, warn, error, off)",
	                     name != NULL ? name : "");
}

int tau_log_format_parse(tau_log_format *out, const char *name)
{
	if (name != NULL && strcasecmp(name, "logfmt") == 0) {
		*out = TAU_LOG_FORMAT_LOGFMT;
		return 0;
	}
	if (name != NULL && strcasecmp(name, "json") == 0) {
		*out = TAU_LOG_FORMAT_JSON;
		return 0;
	}
	return tau_error_set(TAU_EINVAL, "unknown log format \"%s\" (valid: logfmt, json)",
	                     name != NULL ? name : "");
}

const char *tau_log_level_name(tau_log_level level)
{
	if (level < TAU_LOG_DEBUG || level > TAU_LOG_OFF)
		return "unknown";
	return level_names[level];
}

int tau_log_init_from_env(void)
{
	const char *lvl = getenv("TAU_LOG_LEVEL");
	const char *fmt = getenv("TAU_LOG_FORMAT");
	int rc = 0;

	if (lvl != NULL && *lvl != '\0') {
		tau_log_level l;

		if (tau_log_level_parse(&l, lvl) == 0)
			tau_log_set_level(l);
		else
			rc = -TAU_EINVAL;
	}
	if (fmt != NULL && *fmt != '\0') {
		tau_log_format f;

		if (tau_log_format_parse(&f, fmt) == 0)
			tau_log_set_format(f);
		else
			rc = -TAU_EINVAL;
	}
	return rc;
}

void tau_log_set_level(tau_log_level level)
{
	pthread_mutex_lock(&log_lock);
	current_level = level;
	pthread_mutex_unlock(&log_lock);
}

tau_log_level tau_log_get_level(void)
{
	tau_log_level l;

	pthread_mutex_lock(&log_lock);
	l = current_level;
	pthread_mutex_unlock(&log_lock);
	return l;
}

void tau_log_set_format(tau_log_format format)
{
	pthread_mutex_lock(&log_lock);
	current_format = format;
	pthread_mutex_unlock(&log_lock);
}

void tau_log_set_stream(FILE *stream)
{
	pthread_mutex_lock(&log_lock);
	current_stream = stream;
	pthread_mutex_unlock(&log_lock);
}

int tau_log_enabled(tau_log_level level)
{
	return level != TAU_LOG_OFF && level >= tau_log_get_level();
}

/* A bounded line under construction; `truncated` is sticky. */
typedef struct line_buf {
	char data[LINE_MAX_BYTES];
	size_t len;
	int truncated;
} line_buf;

static void put_bytes(line_buf *b, const char *s, size_t n)
{
	/* Keep room for the trailing newline. */
	size_t room = sizeof(b->data) - 1 - b->len;

	if (n > room) {
		n = room;
		b->truncated = 1;
	}
	memcpy(b->data + b->len, s, n);
	b->len += n;
}

static void put_str(line_buf *b, const char *s)
{
	put_bytes(b, s, strlen(s));
}

static int logfmt_needs_quotes(const char *s)
{
	if (*s == '\0')
		return 1;
	for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
		if (*p <= ' ' || *p == '"' || *p == '=' || *p == '\\' || *p >= 0x7f)
			return 1;
	}
	return 0;
}

/*
 * Escapes shared by logfmt quoted values and JSON strings.  A byte that starts no valid UTF-8
 * sequence is written as \u00XX (its Latin-1 reading), so every line is valid UTF-8.
 */
static void put_escaped(line_buf *b, const char *s)
{
	char tmp[8];
	const unsigned char *end = (const unsigned char *)s + strlen(s);

	for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
		if (*p >= 0x80) {
			size_t n = tau_utf8_sequence((const char *)p, (size_t)(end - p));

			if (n == 0) {
				snprintf(tmp, sizeof(tmp), "\\u%04x", *p);
				put_str(b, tmp);
			} else {
				put_bytes(b, (const char *)p, n);
				p += n - 1;
			}
			continue;
		}
		switch (*p) {
		case '"':
			put_str(b, "\\\"");
			break;
		case '\\':
			put_str(b, "\\\\");
			break;
		case '\n':
			put_str(b, "\\n");
			break;
		case '\r':
			put_str(b, "\\r");
			break;
		case '\t':
			put_str(b, "\\t");
			break;
		default:
			if (*p < 0x20) {
				snprintf(tmp, sizeof(tmp), "\\u%04x", *p);
				put_str(b, tmp);
			} else {
				put_bytes(b, (const char *)p, 1);
			}
		}
	}
}

static void put_logfmt_pair(line_buf *b, const char *key, const char *value)
{
	if (b->len > 0)
		put_str(b, " ");
	put_str(b, key);
	put_str(b, "=");
	if (logfmt_needs_quotes(value)) {
		put_str(b, "\"");
		put_escaped(b, value);
		put_str(b, "\"");
	} else {
		put_str(b, value);
	}
}

static void put_json_pair(line_buf *b, const char *key, const char *value)
{
	put_str(b, b->len > 1 ? ",\"" : "\"");
	put_escaped(b, key);
	put_str(b, "\":\"");
	put_escaped(b, value);
	put_str(b, "\"");
}

static void format_time(char *buf, size_t cap)
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	snprintf(buf, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
	         tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ts.tv_nsec / 1000000L));
}

void tau_log(tau_log_level level, const char *msg, ...)
{
	line_buf *b;
	char ts[96];
	tau_log_format fmt;
	FILE *stream;
	va_list ap;

	if (level < TAU_LOG_DEBUG || level >= TAU_LOG_OFF || !tau_log_enabled(level))
		return;
	b = malloc(sizeof(*b));
	if (b == NULL)
		return;
	b->len = 0;
	b->truncated = 0;

	pthread_mutex_lock(&log_lock);
	fmt = current_format;
	stream = current_stream != NULL ? current_stream : stderr;
	pthread_mutex_unlock(&log_lock);

	format_time(ts, sizeof(ts));
	void (*pair)(line_buf *, const char *, const char *) =
	        fmt == TAU_LOG_FORMAT_JSON ? put_json_pair : put_logfmt_pair;
	if (fmt == TAU_LOG_FORMAT_JSON)
		put_str(b, "{");
	pair(b, "ts", ts);
	pair(b, "level", level_names[level]);
	pair(b, "msg", msg != NULL ? msg : "");

	va_start(ap, msg);
	for (;;) {
		const char *key = va_arg(ap, const char *);
		const char *value;

		if (key == NULL)
			break;
		value = va_arg(ap, const char *);
		pair(b, key, value != NULL ? value : "");
	}
	va_end(ap);

	if (b->truncated) {
		/* Make room for the marker and, for JSON, the closing brace. */
		const char *mark =
		        fmt == TAU_LOG_FORMAT_JSON ? ",\"truncated\":\"true\"}" : " truncated=true";
		size_t need = strlen(mark);

		b->len = b->len > sizeof(b->data) - 2 - need ? sizeof(b->data) - 2 - need : b->len;
		/* Do not end inside an escape: drop back to a safe byte. */
		while (b->len > 0 && b->data[b->len - 1] == '\\')
			b->len--;
		if (fmt == TAU_LOG_FORMAT_JSON)
			put_str(b, "\"");
		b->truncated = 0;
		put_str(b, mark);
	} else if (fmt == TAU_LOG_FORMAT_JSON) {
		put_str(b, "}");
	}
	b->data[b->len++] = '\n';

	pthread_mutex_lock(&log_lock);
	fwrite(b->data, 1, b->len, stream);
	fflush(stream);
	pthread_mutex_unlock(&log_lock);
	free(b);
}
