/*
 * yaml_emit.c - a JSON document as YAML through libyaml's emitter.
 *
 * The one idea: libyaml writes the text (indentation, which characters need
 * quotes, escapes) but does not resolve tags, so it would write the string
 * "true" or "0123" plain and a reader would take it for a bool or a number.
 * We tell it, per string, whether the plain form is allowed: only when no
 * YAML 1.1 or 1.2 resolver reads that text as anything but a string (never
 * empty, not a null or bool word of either version, not starting like a
 * number, a timestamp, ".inf", "~", "<<" or "="); libyaml then quotes where
 * we refuse plain or where the text needs it.  Numbers are written in the
 * shortest form that reads back to the same double, with a '.' wherever
 * YAML 1.1's float pattern needs one.
 */
#include "tau/yaml.h"

#include "tau/buf.h"
#include "tau/error.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

/* Whether a reader may take the plain scalar `s` for something other than a string. */
static bool plain_is_ambiguous(const char *s)
{
	/* YAML 1.1's bool and null words (1.2's are among them); compared without case. */
	static const char *const words[] = {"y",   "n",    "yes",   "no",   "on",
	                                    "off", "true", "false", "null", "~"};

	if (s[0] == '\0' || strchr("0123456789+-.~<=", s[0]) != NULL)
		return true;
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strcasecmp(s, words[i]) == 0)
			return true;
	return false;
}

static int emit(yaml_emitter_t *em, yaml_event_t *ev)
{
	/* yaml_emitter_emit takes the event, also when it fails. */
	if (!yaml_emitter_emit(em, ev))
		return tau_error_set(TAU_EINVAL, "yaml: %s",
		                     em->problem != NULL ? em->problem : "the emitter failed");
	return 0;
}

static int scalar(yaml_emitter_t *em, const char *text, bool is_string)
{
	yaml_event_t ev;
	bool plain = !is_string || !plain_is_ambiguous(text);

	/* No tag: a string may be quoted (quoted_implicit), plain only when unambiguous; a
	 * number, bool or null is always plain and never quoted. */
	if (!yaml_scalar_event_initialize(
	            &ev, NULL, NULL, (yaml_char_t *)text, (int)strlen(text), plain, is_string,
	            plain ? YAML_ANY_SCALAR_STYLE : YAML_DOUBLE_QUOTED_SCALAR_STYLE))
		return tau_error_set(TAU_ENOMEM, "out of memory");
	return emit(em, &ev);
}

/* The shortest of %.15g..%.17g that reads back to d, with ".0" before an exponent without a
 * '.', which YAML 1.1 would otherwise read as a string. */
static int number_text(char *buf, size_t cap, double d)
{
	char *e;

	if (!isfinite(d))
		return tau_error_set(TAU_EINVAL, "yaml: a number that is not finite");
	if (d == floor(d) && fabs(d) < 9007199254740992.0) {
		snprintf(buf, cap, "%.0f", d);
		return 0;
	}
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(buf, cap, "%.*g", prec, d);
		if (strtod(buf, NULL) == d)
			break;
	}
	e = strpbrk(buf, "eE");
	if (e != NULL && memchr(buf, '.', (size_t)(e - buf)) == NULL) {
		size_t len = strlen(buf);

		if (len + 3 > cap)
			return tau_error_set(TAU_EINVAL, "yaml: number text too long");
		memmove(e + 2, e, strlen(e) + 1);
		e[0] = '.';
		e[1] = '0';
	}
	return 0;
}

static int node(yaml_emitter_t *em, const cJSON *v)
{
	yaml_event_t ev;
	const cJSON *c;
	char num[64];
	int rc;

	if (cJSON_IsObject(v) || cJSON_IsArray(v)) {
		bool map = cJSON_IsObject(v);

		/* Empty ones in flow style ({} and []); block style cannot write them. */
		if (!(map ? yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1,
		                                                v->child != NULL
		                                                        ? YAML_BLOCK_MAPPING_STYLE
		                                                        : YAML_FLOW_MAPPING_STYLE)
		          : yaml_sequence_start_event_initialize(
		                    &ev, NULL, NULL, 1,
		                    v->child != NULL ? YAML_BLOCK_SEQUENCE_STYLE
		                                     : YAML_FLOW_SEQUENCE_STYLE)))
			return tau_error_set(TAU_ENOMEM, "out of memory");
		if ((rc = emit(em, &ev)) < 0)
			return rc;
		cJSON_ArrayForEach(c, v)
		{
			if (map && (rc = scalar(em, c->string != NULL ? c->string : "", true)) < 0)
				return rc;
			if ((rc = node(em, c)) < 0)
				return rc;
		}
		if (!(map ? yaml_mapping_end_event_initialize(&ev)
		          : yaml_sequence_end_event_initialize(&ev)))
			return tau_error_set(TAU_ENOMEM, "out of memory");
		return emit(em, &ev);
	}
	if (cJSON_IsString(v))
		return scalar(em, v->valuestring != NULL ? v->valuestring : "", true);
	if (cJSON_IsBool(v))
		return scalar(em, cJSON_IsTrue(v) ? "true" : "false", false);
	if (cJSON_IsNull(v))
		return scalar(em, "null", false);
	if (cJSON_IsNumber(v)) {
		if ((rc = number_text(num, sizeof(num), v->valuedouble)) < 0)
			return rc;
		return scalar(em, num, false);
	}
	return tau_error_set(TAU_EINVAL, "yaml: a value that is no JSON type");
}

static int write_to_buf(void *data, unsigned char *bytes, size_t size)
{
	return tau_buf_append(data, bytes, size) == 0;
}

int tau_yaml_from_json(char **out, const cJSON *doc)
{
	tau_buf b = TAU_BUF_INIT(TAU_YAML_MAX_BYTES);
	yaml_emitter_t em;
	yaml_event_t ev;
	char *text = NULL;
	int rc;

	if (doc == NULL)
		return tau_error_set(TAU_EINVAL, "yaml: no document");
	if (!yaml_emitter_initialize(&em))
		return tau_error_set(TAU_ENOMEM, "out of memory");
	yaml_emitter_set_output(&em, write_to_buf, &b);
	yaml_emitter_set_unicode(&em, 1); /* UTF-8 as it is, not \u escapes */
	yaml_emitter_set_width(&em, -1);  /* never fold a long line */
	yaml_emitter_set_indent(&em, 2);
	rc = yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) ? emit(&em, &ev)
	                                                                 : -TAU_ENOMEM;
	if (rc == 0)
		rc = yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1) ? emit(&em, &ev)
		                                                                    : -TAU_ENOMEM;
	if (rc == 0)
		rc = node(&em, doc);
	if (rc == 0)
		rc = yaml_document_end_event_initialize(&ev, 1) ? emit(&em, &ev) : -TAU_ENOMEM;
	if (rc == 0)
		rc = yaml_stream_end_event_initialize(&ev) ? emit(&em, &ev) : -TAU_ENOMEM;
	if (rc == 0 && !yaml_emitter_flush(&em))
		rc = tau_error_set(TAU_EINVAL, "yaml: the emitter failed");
	yaml_emitter_delete(&em);
	if (rc == -TAU_ENOMEM)
		tau_error_set(TAU_ENOMEM, "out of memory");
	/* The writer's failure (the emitter only says "write error"). */
	if (tau_buf_error(&b) == -TAU_ETOOBIG)
		rc = tau_error_set(TAU_ETOOBIG, "yaml: more than %u bytes", TAU_YAML_MAX_BYTES);
	else if (tau_buf_error(&b) < 0)
		rc = tau_error_set(TAU_ENOMEM, "out of memory");
	if (rc == 0 && (text = tau_buf_take(&b, NULL)) == NULL)
		rc = tau_error_set(TAU_ENOMEM, "out of memory");
	tau_buf_free(&b);
	if (rc == 0)
		*out = text;
	return rc;
}
