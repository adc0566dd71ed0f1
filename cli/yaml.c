/*
 * yaml.c - write a JSON document as block-style YAML (`tau ... --dry-run -o yaml`).
 *
 * A small writer rather than libyaml's emitter: libyaml does not resolve
 * tags, so it would write the string "true" or "0123" plain and a reader
 * would take it for a bool or a number.  Here a string is written plain only
 * when no YAML 1.1 or 1.2 reader can take it for anything else (it starts
 * with a letter, holds only letters, digits and ._/- and is not one of the
 * bool or null words); every other string is double-quoted with JSON
 * escapes, which are valid YAML double-quoted escapes.
 */
#include "yaml.h"

#include "tau/error.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static bool plain_safe(const char *s)
{
	static const char *const words[] = {"y",   "n",    "yes",   "no",  "on",
	                                    "off", "true", "false", "null"};

	if (s == NULL || !isalpha((unsigned char)s[0]) || strlen(s) > 256)
		return false;
	for (const char *p = s; *p != '\0'; p++)
		if (!isalnum((unsigned char)*p) && strchr("._/-", *p) == NULL)
			return false;
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strcasecmp(s, words[i]) == 0)
			return false;
	return true;
}

static int write_string(FILE *out, const char *s)
{
	cJSON *tmp;
	char *q;

	if (plain_safe(s))
		return fputs(s, out) < 0 ? -1 : 0;
	tmp = cJSON_CreateString(s);
	q = tmp != NULL ? cJSON_PrintUnformatted(tmp) : NULL;
	cJSON_Delete(tmp);
	if (q == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	fputs(q, out);
	free(q);
	return 0;
}

static int write_scalar(FILE *out, const cJSON *v)
{
	if (cJSON_IsString(v))
		return write_string(out, v->valuestring);
	if (cJSON_IsBool(v))
		return fputs(cJSON_IsTrue(v) ? "true" : "false", out) < 0 ? -1 : 0;
	if (cJSON_IsNull(v))
		return fputs("null", out) < 0 ? -1 : 0;
	if (cJSON_IsNumber(v)) {
		double d = v->valuedouble;

		if (!isfinite(d))
			return tau_error_set(TAU_EINVAL, "yaml: a number that is not finite");
		if (d == floor(d) && fabs(d) < 9007199254740992.0)
			fprintf(out, "%.0f", d);
		else
			fprintf(out, "%.17g", d);
		return 0;
	}
	return tau_error_set(TAU_EINVAL, "yaml: unsupported JSON value");
}

static bool is_collection(const cJSON *v)
{
	return (cJSON_IsObject(v) || cJSON_IsArray(v)) && v->child != NULL;
}

static int write_node(FILE *out, const cJSON *v, int indent, bool inline_first);

/* The value after "key:" or "- ": a nested block on the next lines, or a scalar. */
static int write_value(FILE *out, const cJSON *v, int indent)
{
	if (cJSON_IsObject(v) && v->child == NULL)
		return fputs(" {}\n", out) < 0 ? -1 : 0;
	if (cJSON_IsArray(v) && v->child == NULL)
		return fputs(" []\n", out) < 0 ? -1 : 0;
	if (is_collection(v)) {
		fputc('\n', out);
		return write_node(out, v, indent, false);
	}
	fputc(' ', out);
	if (write_scalar(out, v) < 0)
		return -1;
	fputc('\n', out);
	return 0;
}

/* An object or array at `indent`; with inline_first the first line's indent is already out. */
static int write_node(FILE *out, const cJSON *v, int indent, bool inline_first)
{
	const cJSON *c;
	bool first = true;

	cJSON_ArrayForEach(c, v)
	{
		if (!(first && inline_first))
			fprintf(out, "%*s", indent, "");
		first = false;
		if (cJSON_IsObject(v)) {
			if (write_string(out, c->string) < 0)
				return -1;
			fputc(':', out);
			if (write_value(out, c, indent + 2) < 0)
				return -1;
		} else if (is_collection(c) && cJSON_IsObject(c)) {
			fputs("- ", out);
			if (write_node(out, c, indent + 2, true) < 0)
				return -1;
		} else {
			fputc('-', out);
			if (write_value(out, c, indent + 2) < 0)
				return -1;
		}
	}
	return 0;
}

int tau_cli_yaml_write(FILE *out, const cJSON *doc)
{
	if (!cJSON_IsObject(doc))
		return tau_error_set(TAU_EINVAL, "yaml: the document must be an object");
	if (doc->child == NULL)
		return fputs("{}\n", out) < 0 ? -1 : 0;
	return write_node(out, doc, 0, false);
}
