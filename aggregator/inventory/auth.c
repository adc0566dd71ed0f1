/*
 * auth.c - the agent authentication decision and the review cache.
 *
 * The decision is a pure function of the review, so its whole table is unit
 * tested without an API server.  The cache never holds a token, only its
 * SHA-256 (32 raw bytes), holds each user name once for all the entries
 * naming it, and is bounded: when full it first drops expired entries, then
 * the entry closest to expiry.  A review is never trusted past the token's
 * own `exp`, so a cached "yes" cannot outlive the credential it vouched for.
 */
#include "auth.h"
#include "jwt.h"

#include "tau/error.h"
#include "tau/hmap.h"
#include "tau/json.h"

#include <openssl/evp.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tau_auth_review_set(tau_auth_review *out, bool authenticated, const char *username,
                        const char *node_name, const char *error)
{
	size_t lu = username != NULL ? strlen(username) : 0;
	size_t ln = node_name != NULL ? strlen(node_name) : 0;

	memset(out, 0, sizeof(*out));
	if (lu >= sizeof(out->username) || ln >= sizeof(out->node_name)) {
		int rc = tau_error_set(
		        TAU_EINVAL, "TokenReview answered a %s of %zu bytes (at most %zu); refused",
		        lu >= sizeof(out->username) ? "user name" : "node name",
		        lu >= sizeof(out->username) ? lu : ln,
		        lu >= sizeof(out->username) ? sizeof(out->username) - 1
		                                    : sizeof(out->node_name) - 1);

		snprintf(out->error, sizeof(out->error), "%.*s", (int)sizeof(out->error) - 1,
		         tau_error_last()->msg);
		return rc;
	}
	out->authenticated = authenticated;
	if (lu != 0)
		memcpy(out->username, username, lu + 1);
	if (ln != 0)
		memcpy(out->node_name, node_name, ln + 1);
	snprintf(out->error, sizeof(out->error), "%s", error != NULL ? error : "");
	return 0;
}

int tau_auth_sa_user(char *out, size_t cap, const char *ns_name)
{
	const char *colon = ns_name != NULL ? strchr(ns_name, ':') : NULL;
	int n;

	if (colon == NULL || colon == ns_name || colon[1] == '\0' || strchr(colon + 1, ':'))
		return tau_error_set(TAU_EINVAL,
		                     "agent service account \"%s\" is not NAMESPACE:NAME",
		                     ns_name != NULL ? ns_name : "");
	n = snprintf(out, cap, "system:serviceaccount:%s", ns_name);
	if (n < 0 || (size_t)n >= cap)
		return tau_error_set(TAU_EINVAL, "agent service account name too long");
	return 0;
}

tau_rpc_code tau_auth_decide_user(char *msg, size_t cap, bool token_present, bool expired,
                                  const tau_auth_review *review, const char *expected_user)
{
	if (!token_present) {
		snprintf(msg, cap, "missing bearer token (authorization: Bearer <token>)");
		return TAU_RPC_UNAUTHENTICATED;
	}
	if (expired) {
		snprintf(msg, cap, "bearer token has expired");
		return TAU_RPC_UNAUTHENTICATED;
	}
	if (review == NULL || !review->authenticated) {
		snprintf(msg, cap, "bearer token rejected by TokenReview: %s",
		         review != NULL && review->error[0] ? review->error : "not authenticated");
		return TAU_RPC_UNAUTHENTICATED;
	}
	if (strcmp(review->username, expected_user) != 0) {
		snprintf(msg, cap, "user %.200s is not the agent service account %.200s",
		         review->username, expected_user);
		return TAU_RPC_PERMISSION_DENIED;
	}
	if (review->node_name[0] == '\0') {
		snprintf(msg, cap,
		         "token of %.200s is not bound to a node (no " TAU_AUTH_NODE_EXTRA ")",
		         review->username);
		return TAU_RPC_PERMISSION_DENIED;
	}
	msg[0] = '\0';
	return TAU_RPC_OK;
}

tau_rpc_code tau_auth_decide_node(char *msg, size_t cap, const char *bound, const char *node)
{
	if (bound == NULL)
		bound = "";
	if (node == NULL || strcmp(bound, node) != 0) {
		snprintf(msg, cap, "token of node %.253s may not report for node %.253s", bound,
		         node != NULL ? node : "");
		return TAU_RPC_PERMISSION_DENIED;
	}
	msg[0] = '\0';
	return TAU_RPC_OK;
}

/* The unverified claims (payload) of a JWT.  @return 0 and *out, or -TAU_ENOTFOUND. */
static int token_claims(cJSON **out, const char *token)
{
	const char *p1 = strchr(token, '.');
	const char *p2 = p1 != NULL ? strchr(p1 + 1, '.') : NULL;
	unsigned char buf[4096];
	long n;
	cJSON *claims = NULL;

	if (p2 == NULL)
		return -TAU_ENOTFOUND;
	n = tau_jwt_b64url_decode(buf, sizeof(buf), p1 + 1, p2);
	if (n <= 0 || tau_json_parse(&claims, (const char *)buf, (size_t)n, sizeof(buf)) < 0)
		return -TAU_ENOTFOUND;
	if (!cJSON_IsObject(claims)) {
		cJSON_Delete(claims);
		return -TAU_ENOTFOUND;
	}
	*out = claims;
	return 0;
}

/* True when `token` is header.claims.signature, base64url, the header a JSON object. */
static bool jwt_shaped(const char *token)
{
	const char *p1 = strchr(token, '.');
	const char *p2 = p1 != NULL ? strchr(p1 + 1, '.') : NULL;
	const char *end = p2 != NULL ? p2 + 1 + strlen(p2 + 1) : NULL;
	unsigned char buf[1024];
	cJSON *header = NULL;
	long n;
	bool ok;

	if (p2 == NULL || strchr(p2 + 1, '.') != NULL || end == p2 + 1)
		return false;
	if (strspn(p2 + 1, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_+/=") !=
	    (size_t)(end - p2 - 1))
		return false;
	n = tau_jwt_b64url_decode(buf, sizeof(buf), token, p1);
	if (n <= 0 || tau_json_parse(&header, (const char *)buf, (size_t)n, sizeof(buf)) < 0)
		return false;
	ok = cJSON_IsObject(header);
	cJSON_Delete(header);
	return ok;
}

tau_rpc_code tau_auth_token_precheck(char *msg, size_t cap, const char *token,
                                     const char *expected_user)
{
	static const char prefix[] = "system:serviceaccount:";
	cJSON *claims = NULL;
	const cJSON *sub, *k8s;
	tau_rpc_code code = TAU_RPC_OK;
	const char *ns = expected_user + strlen(prefix);
	const char *colon = strchr(ns, ':');

	if (!jwt_shaped(token) || token_claims(&claims, token) < 0) {
		snprintf(msg, cap,
		         "bearer token is not a JWT (a ServiceAccount token is one); "
		         "no TokenReview made");
		return TAU_RPC_UNAUTHENTICATED;
	}
	sub = cJSON_GetObjectItemCaseSensitive(claims, "sub");
	k8s = cJSON_GetObjectItemCaseSensitive(claims, "kubernetes.io");
	if (!cJSON_IsString(sub) || sub->valuestring[0] == '\0') {
		snprintf(msg, cap,
		         "bearer token names no subject (sub claim); no TokenReview made");
		code = TAU_RPC_UNAUTHENTICATED;
	} else if (strcmp(sub->valuestring, expected_user) != 0) {
		snprintf(msg, cap,
		         "user %.200s is not the agent service account %.200s (the token's own "
		         "claims; no TokenReview made)",
		         sub->valuestring, expected_user);
		code = TAU_RPC_PERMISSION_DENIED;
	} else if (k8s != NULL && strncmp(expected_user, prefix, strlen(prefix)) == 0 &&
	           colon != NULL) {
		const cJSON *kns = cJSON_GetObjectItemCaseSensitive(k8s, "namespace");
		const cJSON *sa = cJSON_GetObjectItemCaseSensitive(k8s, "serviceaccount");
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(sa, "name");

		if (!cJSON_IsObject(k8s) || !cJSON_IsString(kns) || !cJSON_IsString(name) ||
		    strlen(kns->valuestring) != (size_t)(colon - ns) ||
		    strncmp(kns->valuestring, ns, (size_t)(colon - ns)) != 0 ||
		    strcmp(name->valuestring, colon + 1) != 0) {
			snprintf(
			        msg, cap,
			        "bearer token's kubernetes.io claims do not name the agent service "
			        "account %.200s; no TokenReview made",
			        expected_user);
			code = TAU_RPC_UNAUTHENTICATED;
		}
	}
	cJSON_Delete(claims);
	if (code == TAU_RPC_OK)
		msg[0] = '\0';
	return code;
}

/* The claim `name` of `token`'s payload, taken out of it (the caller deletes it); NULL when the
 * token has no readable payload or no such claim. */
static cJSON *token_claim(const char *token, const char *name)
{
	cJSON *claims = NULL;
	cJSON *item;

	if (token_claims(&claims, token) < 0)
		return NULL;
	item = cJSON_DetachItemFromObjectCaseSensitive(claims, name);
	cJSON_Delete(claims);
	return item;
}

int tau_auth_token_subject(char *out, size_t cap, const char *token)
{
	cJSON *sub = token_claim(token, "sub");
	int rc = -TAU_ENOTFOUND;

	if (cJSON_IsString(sub) && sub->valuestring[0] != '\0') {
		snprintf(out, cap, "%s", sub->valuestring);
		rc = 0;
	}
	cJSON_Delete(sub);
	return rc;
}

int tau_auth_token_expiry(int64_t *exp_s, const char *token)
{
	cJSON *exp = token_claim(token, "exp");
	int rc = -TAU_ENOTFOUND;

	if (cJSON_IsNumber(exp) && exp->valuedouble > 0 && exp->valuedouble < 1e15) {
		*exp_s = (int64_t)exp->valuedouble;
		rc = 0;
	}
	cJSON_Delete(exp);
	return rc;
}

void tau_auth_token_hash(char out[65], const char *token)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	static const char hex[] = "0123456789abcdef";

	EVP_Digest(token, strlen(token), md, &mdlen, EVP_sha256(), NULL);
	for (unsigned int i = 0; i < 32; i++) {
		out[2 * i] = hex[md[i] >> 4];
		out[2 * i + 1] = hex[md[i] & 15];
	}
	out[64] = '\0';
}

/* ---- cache: entries keyed by the token's raw SHA-256, user names held once ---- */

#define KEY_BYTES 32

/* A user name reviews answered, held once for every entry naming it (the agent's, mostly). */
typedef struct cache_user {
	tau_hmap_node node; /* keyed by name */
	size_t refs;
	char name[];
} cache_user;

/* Compact: the review's node name and error are stored back to back in `text`. */
typedef struct cache_entry {
	struct cache_entry *next; /* in its bucket */
	int64_t expires_ms;
	cache_user *user; /* NULL: no user name */
	uint8_t key[KEY_BYTES];
	bool authenticated;
	char text[];
} cache_entry;

struct tau_auth_cache {
	pthread_mutex_t mu;
	cache_entry **buckets; /* chained by the key's first bytes */
	size_t n_buckets;      /* a power of two, at least max: chains stay short */
	size_t len;
	tau_hmap users; /* cache_user by name */
	size_t max;
};

static int hex_digit(char ch)
{
	return ch >= '0' && ch <= '9'   ? ch - '0'
	       : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
	       : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
	                                : -1;
}

/*
 * The 32 bytes a hash names: its digits' value for 64 hex digits (tau_auth_token_hash), else
 * the SHA-256 of the text, so any key stays distinct from every other.
 */
static void key_bytes(uint8_t out[KEY_BYTES], const char *hash)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	bool hex = strlen(hash) == 2 * KEY_BYTES;

	for (size_t i = 0; hex && i < KEY_BYTES; i++) {
		int hi = hex_digit(hash[2 * i]), lo = hex_digit(hash[2 * i + 1]);

		hex = hi >= 0 && lo >= 0;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	if (hex)
		return;
	EVP_Digest(hash, strlen(hash), md, &mdlen, EVP_sha256(), NULL);
	memcpy(out, md, KEY_BYTES);
}

/* The link that holds the entry of `key` (*link NULL: none).  Lock held. */
static cache_entry **find(tau_auth_cache *c, const uint8_t key[KEY_BYTES])
{
	uint64_t h;
	cache_entry **link;

	memcpy(&h, key, sizeof(h)); /* a SHA-256: its bytes are as good as any hash of them */
	link = &c->buckets[h & (c->n_buckets - 1)];
	while (*link != NULL && memcmp((*link)->key, key, KEY_BYTES) != 0)
		link = &(*link)->next;
	return link;
}

/* The shared copy of user name `name` for one more entry; *out NULL for "".  Lock held. */
static bool user_hold(tau_auth_cache *c, const char *name, cache_user **out)
{
	tau_hmap_node *n;
	size_t len;

	*out = NULL;
	if (name[0] == '\0')
		return true;
	n = tau_hmap_get(&c->users, name);
	if (n != NULL) {
		*out = TAU_HMAP_ENTRY(n, cache_user, node);
		(*out)->refs++;
		return true;
	}
	len = strlen(name) + 1;
	*out = malloc(sizeof(**out) + len);
	if (*out == NULL)
		return false;
	memcpy((*out)->name, name, len);
	(*out)->refs = 1;
	tau_hmap_insert(&c->users, &(*out)->node, (*out)->name);
	return true;
}

/* Free the entry `*link` holds and take it out.  Lock held. */
static void entry_drop(tau_auth_cache *c, cache_entry **link)
{
	cache_entry *e = *link;

	*link = e->next;
	c->len--;
	if (e->user != NULL && --e->user->refs == 0) {
		tau_hmap_remove(&c->users, &e->user->node);
		free(e->user);
	}
	free(e);
}

static cache_entry *entry_new(const uint8_t key[KEY_BYTES], const tau_auth_review *r,
                              int64_t expires_ms)
{
	size_t ln = strlen(r->node_name) + 1, le = strlen(r->error) + 1;
	cache_entry *e = calloc(1, offsetof(cache_entry, text) + ln + le);

	if (e == NULL)
		return NULL;
	memcpy(e->key, key, KEY_BYTES);
	e->authenticated = r->authenticated;
	e->expires_ms = expires_ms;
	memcpy(e->text, r->node_name, ln);
	memcpy(e->text + ln, r->error, le);
	return e;
}

static void entry_review(const cache_entry *e, tau_auth_review *out)
{
	const char *node = e->text, *err = node + strlen(node) + 1;

	/* Stored from a review that fit, so it fits again. */
	(void)tau_auth_review_set(out, e->authenticated, e->user != NULL ? e->user->name : "", node,
	                          err);
}

int tau_auth_cache_new(tau_auth_cache **out, size_t max_entries)
{
	tau_auth_cache *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	c->max = max_entries > 0 ? max_entries : 1;
	for (c->n_buckets = 1024; c->n_buckets < c->max && c->n_buckets <= SIZE_MAX / 4;)
		c->n_buckets *= 2;
	c->buckets = calloc(c->n_buckets, sizeof(*c->buckets));
	if (c->buckets == NULL || tau_hmap_init(&c->users, 0) < 0) {
		free(c->buckets);
		free(c);
		return tau_error_set(TAU_ENOMEM, "out of memory");
	}
	pthread_mutex_init(&c->mu, NULL);
	*out = c;
	return 0;
}

void tau_auth_cache_free(tau_auth_cache *c)
{
	if (c == NULL)
		return;
	for (size_t i = 0; i < c->n_buckets; i++)
		while (c->buckets[i] != NULL)
			entry_drop(c, &c->buckets[i]);
	free(c->buckets);
	tau_hmap_destroy(&c->users); /* empty: every entry has let go */
	pthread_mutex_destroy(&c->mu);
	free(c);
}

bool tau_auth_cache_get(tau_auth_cache *c, const char *hash, int64_t now_ms, tau_auth_review *out)
{
	bool found = false;
	uint8_t key[KEY_BYTES];
	cache_entry *e;

	key_bytes(key, hash);
	pthread_mutex_lock(&c->mu);
	e = *find(c, key);
	if (e != NULL && e->expires_ms > now_ms) {
		entry_review(e, out);
		found = true;
	}
	pthread_mutex_unlock(&c->mu);
	return found;
}

/* Drop expired entries; if none was, the one closest to expiry.  Lock held. */
static void evict(tau_auth_cache *c, int64_t now_ms)
{
	cache_entry **victim = NULL;

	for (size_t i = 0; i < c->n_buckets; i++) {
		for (cache_entry **link = &c->buckets[i]; *link != NULL;) {
			if ((*link)->expires_ms <= now_ms) {
				entry_drop(c, link);
				continue;
			}
			if (victim == NULL || (*link)->expires_ms < (*victim)->expires_ms)
				victim = link;
			link = &(*link)->next;
		}
	}
	/* The victim's link still holds it: the walk dropped only entries it reached after the
	 * victim, and dropping one rewrites the link to that entry, never an earlier one. */
	if (c->len >= c->max && victim != NULL)
		entry_drop(c, victim);
}

void tau_auth_cache_put(tau_auth_cache *c, const char *hash, const tau_auth_review *review,
                        int64_t expires_ms, int64_t now_ms)
{
	uint8_t key[KEY_BYTES];
	cache_entry *fresh, **link;

	if (expires_ms <= now_ms)
		return;
	key_bytes(key, hash);
	fresh = entry_new(key, review, expires_ms);
	if (fresh == NULL)
		return; /* not cached: the next stream asks again */
	pthread_mutex_lock(&c->mu);
	if (!user_hold(c, review->username, &fresh->user)) {
		pthread_mutex_unlock(&c->mu);
		free(fresh);
		return;
	}
	link = find(c, key);
	if (*link != NULL)
		entry_drop(c, link);
	else if (c->len >= c->max)
		evict(c, now_ms);
	link = find(c, key);
	fresh->next = *link;
	*link = fresh;
	c->len++;
	pthread_mutex_unlock(&c->mu);
}

/* One of the cache's counts, read under its lock. */
static size_t count_locked(tau_auth_cache *c, const size_t *count)
{
	size_t n;

	pthread_mutex_lock(&c->mu);
	n = *count;
	pthread_mutex_unlock(&c->mu);
	return n;
}

size_t tau_auth_cache_size(tau_auth_cache *c)
{
	return count_locked(c, &c->len);
}

size_t tau_auth_cache_users(tau_auth_cache *c)
{
	return count_locked(c, &c->users.len);
}
