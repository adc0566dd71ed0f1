/*
 * kube_errors.c - what a failed Kubernetes API request means.
 *
 * An error answer (a Status object, or any other body) is decoded into a
 * tau_kube_api_error: HTTP code, reason, message, Retry-After and the
 * continue token of an expired list.  The last one is kept per thread so a
 * caller can branch on the reason after any verb fails; the HTTP code maps
 * to a negative TAU_E* code.
 */
#define _POSIX_C_SOURCE 200809L
#include "tau/kube.h"

#include "kube_internal.h"
#include "tau/error.h"
#include "tau/json.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static _Thread_local tau_kube_api_error last_api_error = {.retry_after_s = -1};

void tau_kube_api_error_store(const tau_kube_api_error *e)
{
	last_api_error = *e;
}

void tau_kube_api_error_reset(void)
{
	memset(&last_api_error, 0, sizeof(last_api_error));
	last_api_error.retry_after_s = -1;
}

const tau_kube_api_error *tau_kube_api_error_last(void)
{
	return &last_api_error;
}

int tau_kube_api_error_code(int http_code)
{
	switch (http_code) {
	case 400:
	case 422:
		return -TAU_EINVAL;
	case 401:
	case 403:
		return -TAU_EPERM;
	case 404:
		return -TAU_ENOTFOUND;
	case 409:
		return -TAU_ECONFLICT;
	case 413:
		return -TAU_ETOOBIG;
	case 429:
	case 503:
		return -TAU_EAGAIN;
	case 504:
		return -TAU_ETIMEOUT;
	default:
		return -TAU_EIO;
	}
}

static const struct {
	const char *reason;
	int code;
} reason_codes[] = {
        {"BadRequest", 400},    {"Unauthorized", 401},          {"Forbidden", 403},
        {"NotFound", 404},      {"MethodNotAllowed", 405},      {"NotAcceptable", 406},
        {"Conflict", 409},      {"AlreadyExists", 409},         {"Expired", 410},
        {"Gone", 410},          {"RequestEntityTooLarge", 413}, {"UnsupportedMediaType", 415},
        {"Invalid", 422},       {"TooManyRequests", 429},       {"InternalError", 500},
        {"ServerTimeout", 500}, {"ServiceUnavailable", 503},    {"Timeout", 504},
};

static const char *reason_for_code(int code, const char *method)
{
	if (code == 409)
		return method && strcmp(method, "POST") == 0 ? "AlreadyExists" : "Conflict";
	for (size_t i = 0; i < sizeof(reason_codes) / sizeof(reason_codes[0]); i++)
		if (reason_codes[i].code == code && strcmp(reason_codes[i].reason, "Gone") != 0 &&
		    strcmp(reason_codes[i].reason, "ServerTimeout") != 0)
			return reason_codes[i].reason;
	return code >= 500 ? "InternalError" : "Unknown";
}

bool tau_kube_api_error_is(const tau_kube_api_error *e, const char *reason)
{
	if (e == NULL || reason == NULL)
		return false;
	if (e->reason[0] != '\0') {
		if (strcmp(e->reason, reason) == 0)
			return true;
		return strcmp(reason, "Expired") == 0 && strcmp(e->reason, "Gone") == 0;
	}
	for (size_t i = 0; i < sizeof(reason_codes) / sizeof(reason_codes[0]); i++)
		if (strcmp(reason_codes[i].reason, reason) == 0)
			return reason_codes[i].code == e->http_code;
	return false;
}

/* Copy text into a fixed field, replacing control bytes and trimming whitespace. */
static void copy_text(char *dst, size_t cap, const char *src, size_t len)
{
	size_t o = 0;

	while (len > 0 && isspace((unsigned char)*src)) {
		src++;
		len--;
	}
	while (len > 0 && isspace((unsigned char)src[len - 1]))
		len--;
	for (size_t i = 0; i < len && o + 1 < cap; i++) {
		unsigned char ch = (unsigned char)src[i];

		dst[o++] = (ch < 0x20 || ch == 0x7f) ? ' ' : (char)ch;
	}
	dst[o] = '\0';
}

int tau_kube_api_error_decode(tau_kube_api_error *out, int http_code, const char *body, size_t len,
                              const char *method, int retry_after_header)
{
	cJSON *root = NULL;
	const char *s;
	int64_t n;

	memset(out, 0, sizeof(*out));
	out->http_code = http_code;
	out->retry_after_s = retry_after_header;
	if (body != NULL && len > 0 && tau_json_parse(&root, body, len, 0) == 0 &&
	    cJSON_IsObject(root) && tau_json_get_string(&s, root, "kind") == 0 &&
	    strcmp(s, "Status") == 0) {
		if (tau_json_get_string(&s, root, "reason") == 0)
			copy_text(out->reason, sizeof(out->reason), s, strlen(s));
		if (tau_json_get_string(&s, root, "message") == 0)
			copy_text(out->message, sizeof(out->message), s, strlen(s));
		if (tau_json_get_int(&n, root, "code") == 0 && n >= 100 && n <= 599 &&
		    http_code == 0)
			out->http_code = (int)n;
		if (out->retry_after_s < 0 &&
		    tau_json_get_int(&n, root, "details.retryAfterSeconds") == 0 && n >= 0 &&
		    n < 86400)
			out->retry_after_s = (int)n;
		if (tau_json_get_string(&s, root, "metadata.continue") == 0)
			copy_text(out->continue_token, sizeof(out->continue_token), s, strlen(s));
	} else if (body != NULL && len > 0) {
		/* Plain text (API priority and fairness 429, proxies): keep the first line. */
		const char *nl = memchr(body, '\n', len);
		size_t first = nl ? (size_t)(nl - body) : len;

		if (first == 0)
			first = len;
		copy_text(out->message, sizeof(out->message), body, first);
	}
	tau_error_clear();
	cJSON_Delete(root);
	if (out->reason[0] == '\0')
		snprintf(out->reason, sizeof(out->reason), "%s",
		         reason_for_code(out->http_code, method));
	if (out->message[0] == '\0')
		snprintf(out->message, sizeof(out->message), "the server responded with status %d",
		         out->http_code);
	return tau_kube_api_error_code(out->http_code);
}
