/*
 * json.c - bounded parsing and typed, path-based getters over cJSON.
 *
 * The one idea: every document from outside goes through tau_json_parse,
 * which refuses oversized or too-deeply nested input before cJSON sees it,
 * and every read names the type it expects, so a wrong type is an error
 * (-TAU_ETYPE) instead of a NULL dereference later.
 */
#include "tau/json.h"

#include "tau/error.h"
#include "tau/rpc.h"
#include "tau/utf8.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/*
 * Nesting depth check before parsing, skipping string contents, so a
 * document of a million '[' is refused in linear time with no recursion.
 * Strings holding a raw control character are refused here too (RFC 8259;
 * Go's encoder always escapes them, and a raw NUL would cut a string short).
 */
static int check_depth(const char *buf, size_t len)
{
	size_t depth = 0;
	int in_string = 0;

	for (size_t i = 0; i < len; i++) {
		char c = buf[i];

		if (in_string) {
			if (c == '\\') {
				i++;
			} else if (c == '"') {
				in_string = 0;
			} else if ((unsigned char)c < 0x20) {
				/* RFC 8259 forbids them; a raw NUL would cut the string short. */
				return tau_error_set(
				        TAU_EINVAL,
				        "control character in a JSON string at offset %zu", i);
			}
			continue;
		}
		if (c == '"') {
			in_string = 1;
		} else if (c == '{' || c == '[') {
			if (++depth > TAU_JSON_MAX_DEPTH)
				return tau_error_set(
				        TAU_ETOOBIG,
				        "JSON nesting deeper than %d levels at offset %zu",
				        TAU_JSON_MAX_DEPTH, i);
		} else if ((c == '}' || c == ']') && depth > 0) {
			depth--;
		}
	}
	return 0;
}

int tau_json_parse(cJSON **out, const char *buf, size_t len, size_t cap)
{
	const char *end = NULL;
	cJSON *root;
	int rc;

	if (cap == 0)
		cap = TAU_JSON_DEFAULT_CAP;
	if (buf == NULL)
		return tau_error_set(TAU_EINVAL, "no JSON input");
	if (len > cap)
		return tau_error_set(TAU_ETOOBIG,
		                     "JSON document of %zu bytes exceeds the %zu byte cap", len,
		                     cap);
	rc = check_depth(buf, len);
	if (rc < 0)
		return rc;
	root = cJSON_ParseWithLengthOpts(buf, len, &end, 0);
	if (root == NULL) {
		size_t off = (end != NULL && end >= buf) ? (size_t)(end - buf) : 0;

		return tau_error_set(TAU_EINVAL, "malformed JSON at offset %zu of %zu", off, len);
	}
	/* Only whitespace may follow the value. */
	if (end != NULL) {
		size_t off = (size_t)(end - buf);

		while (off < len && strchr(" \t\r\n", buf[off]) != NULL && buf[off] != '\0')
			off++;
		if (off < len) {
			cJSON_Delete(root);
			return tau_error_set(TAU_EINVAL,
			                     "trailing data after JSON value at offset %zu", off);
		}
	}
	*out = root;
	return 0;
}

const cJSON *tau_json_find(const cJSON *root, const char *path)
{
	const cJSON *cur = root;
	const char *p = path;

	if (root == NULL || path == NULL)
		return NULL;
	if (*p == '\0')
		return root;
	while (cur != NULL) {
		const char *dot = strchr(p, '.');
		size_t n = dot != NULL ? (size_t)(dot - p) : strlen(p);
		const cJSON *child = NULL;

		if (!cJSON_IsObject(cur))
			return NULL;
		for (const cJSON *it = cur->child; it != NULL; it = it->next) {
			if (it->string != NULL && strlen(it->string) == n &&
			    memcmp(it->string, p, n) == 0) {
				child = it;
				break;
			}
		}
		cur = child;
		if (dot == NULL)
			return cur;
		p = dot + 1;
	}
	return NULL;
}

/* Common lookup: absent and JSON null are both "not found". */
static int lookup(const cJSON **item, const cJSON *root, const char *path)
{
	const cJSON *it = tau_json_find(root, path);

	if (it == NULL || cJSON_IsNull(it))
		return tau_error_set(TAU_ENOTFOUND, "%s: not set", path);
	*item = it;
	return 0;
}

/* lookup, then the item must pass is(), else TAU_ETYPE "<path>: expected <what>". */
static int lookup_as(const cJSON **out, const cJSON *root, const char *path,
                     cJSON_bool (*is)(const cJSON *const), const char *what)
{
	const cJSON *it = NULL;
	int rc = lookup(&it, root, path);

	if (rc < 0)
		return rc;
	if (!is(it))
		return tau_error_set(TAU_ETYPE, "%s: expected %s", path, what);
	*out = it;
	return 0;
}

int tau_json_get_string(const char **out, const cJSON *root, const char *path)
{
	const cJSON *it = NULL;
	int rc = lookup(&it, root, path);

	if (rc < 0)
		return rc;
	if (!cJSON_IsString(it) || it->valuestring == NULL)
		return tau_error_set(TAU_ETYPE, "%s: expected a string", path);
	*out = it->valuestring;
	return 0;
}

const char *tau_json_str(const cJSON *root, const char *path)
{
	const cJSON *it = tau_json_find(root, path);

	return cJSON_IsString(it) ? it->valuestring : NULL;
}

const char *tau_json_member_str(const cJSON *map, const char *key)
{
	const cJSON *v;

	if (!cJSON_IsObject(map) || key == NULL)
		return NULL;
	v = cJSON_GetObjectItemCaseSensitive(map, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

const char *tau_json_label(const cJSON *obj, const char *key)
{
	return tau_json_member_str(tau_json_find(obj, "metadata.labels"), key);
}

const char *tau_json_annotation(const cJSON *obj, const char *key)
{
	return tau_json_member_str(tau_json_find(obj, "metadata.annotations"), key);
}

int tau_json_get_int(int64_t *out, const cJSON *root, const char *path)
{
	const cJSON *it = NULL;
	int rc = lookup_as(&it, root, path, cJSON_IsNumber, "a number");
	double d;

	if (rc < 0)
		return rc;
	d = it->valuedouble;
	/* 2^63 is exactly representable; anything at or above it does not fit. */
	if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0) || d != floor(d))
		return tau_error_set(TAU_ERANGE, "%s: %g is not an exact 64-bit integer", path, d);
	*out = (int64_t)d;
	return 0;
}

int tau_json_get_bool(bool *out, const cJSON *root, const char *path)
{
	const cJSON *it = NULL;
	int rc = lookup_as(&it, root, path, cJSON_IsBool, "a boolean");

	if (rc == 0)
		*out = cJSON_IsTrue(it);
	return rc;
}

int tau_json_get_object(const cJSON **out, const cJSON *root, const char *path)
{
	return lookup_as(out, root, path, cJSON_IsObject, "an object");
}

int tau_json_get_array(const cJSON **out, const cJSON *root, const char *path)
{
	return lookup_as(out, root, path, cJSON_IsArray, "an array");
}

int tau_json_print(char **out, const cJSON *item)
{
	char *s = cJSON_PrintUnformatted(item);

	if (s == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory serialising JSON");
	*out = s;
	return 0;
}

/* A valid UTF-8 copy of `s` (invalid bytes as U+00XX), or NULL when out of memory. */
static char *utf8_fixed(const char *s, size_t len)
{
	char *out = malloc(len * 2 + 1), *o = out;

	if (out == NULL)
		return NULL;
	for (size_t i = 0; i < len;) {
		size_t n = tau_utf8_sequence(s + i, len - i);

		if (n == 0) {
			unsigned char b = (unsigned char)s[i++];

			*o++ = (char)(0xC0 | (b >> 6));
			*o++ = (char)(0x80 | (b & 0x3F));
			continue;
		}
		memcpy(o, s + i, n);
		o += n;
		i += n;
	}
	*o = '\0';
	return out;
}

/* Replace *str with a valid copy when it is not valid UTF-8.  @return 1 changed, 0, -ENOMEM. */
static int fix_string(char **str)
{
	char *fixed;

	if (*str == NULL || tau_rpc_utf8_valid(*str, strlen(*str)))
		return 0;
	fixed = utf8_fixed(*str, strlen(*str));
	if (fixed == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	cJSON_free(*str);
	*str = fixed;
	return 1;
}

/* Fix one item's own name and string value.  @return strings changed, or -TAU_ENOMEM. */
static int fix_item(cJSON *it)
{
	int a = 0, b = 0;

	if (!(it->type & cJSON_StringIsConst))
		a = fix_string(&it->string);
	if (a >= 0 && cJSON_IsString(it))
		b = fix_string(&it->valuestring);
	return a < 0 ? a : b < 0 ? b : a + b;
}

int tau_json_fix_utf8(cJSON *root)
{
	int changed;

	if (root == NULL)
		return 0;
	changed = fix_item(root);
	for (cJSON *it = root->child; it != NULL && changed >= 0; it = it->next) {
		int rc = tau_json_fix_utf8(it);

		changed = rc < 0 ? rc : changed + rc;
	}
	return changed;
}
