/*
 * selector.c - Kubernetes label selectors: parse, build from JSON, match, print.
 *
 * Design: both input forms end as the same thing, a list of requirements
 * (key, operator, sorted unique values) kept sorted by key, exactly the
 * shape apimachinery's internalSelector has; matching and printing only
 * ever see that list.  The string parser is a one-token-lookahead
 * recursive descent that follows labels.Parse token for token, including
 * its quirks (`in`/`notin` are keywords after a key but plain words among
 * values, `x=` means the empty value, `in ()` means {""}), so a selector
 * means here what it means to the API server.  Every count that input
 * controls is capped before anything grows.
 */
#include "tau/selector.h"

#include "tau/error.h"
#include "tau/names.h"

#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum op {
	OP_IN,
	OP_NOT_IN,
	OP_EQUALS,
	OP_DOUBLE_EQUALS,
	OP_NOT_EQUALS,
	OP_EXISTS,
	OP_DOES_NOT_EXIST,
	OP_GREATER_THAN,
	OP_LESS_THAN,
};

struct requirement {
	char *key;
	enum op op;
	char **values; /* sorted, no duplicates */
	size_t nvalues;
	int64_t bound; /* the integer of OP_GREATER_THAN / OP_LESS_THAN */
};

struct tau_selector {
	bool nothing; /* matches no object; reqs is empty */
	struct requirement *reqs;
	size_t nreqs;
	size_t cap;
};

/* A byte range of the input; not NUL-terminated. */
struct span {
	const char *p;
	size_t len;
};

/* Longest token or value shown in a message. */
#define SHOW_MAX 96

/* ---- small helpers ---------------------------------------------------- */

static char *dup_span(struct span s)
{
	char *d = malloc(s.len + 1);

	if (d == NULL)
		return NULL;
	if (s.len != 0)
		memcpy(d, s.p, s.len);
	d[s.len] = '\0';
	return d;
}

static int span_cmp(const void *a, const void *b)
{
	const struct span *x = a;
	const struct span *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = n ? memcmp(x->p, y->p, n) : 0;

	if (c != 0)
		return c;
	return (x->len > y->len) - (x->len < y->len);
}

/* strconv.ParseInt(s, 10, 64): optional sign, one or more digits, in range. */
static bool parse_int64(const char *s, int64_t *out)
{
	bool neg = false;
	uint64_t limit = (uint64_t)INT64_MAX;
	uint64_t v = 0;

	if (*s == '+' || *s == '-') {
		neg = *s == '-';
		s++;
	}
	if (neg)
		limit++;
	if (*s == '\0')
		return false;
	for (; *s != '\0'; s++) {
		unsigned d;

		if (*s < '0' || *s > '9')
			return false;
		d = (unsigned)(*s - '0');
		if (v > (limit - d) / 10)
			return false;
		v = v * 10 + d;
	}
	if (neg)
		*out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
	else
		*out = (int64_t)v;
	return true;
}

/* ---- requirements and selectors --------------------------------------- */

static void requirement_clear(struct requirement *r)
{
	for (size_t i = 0; i < r->nvalues; i++)
		free(r->values[i]);
	free(r->values);
	free(r->key);
	memset(r, 0, sizeof(*r));
}

/*
 * Fill r with key (ownership taken, freed on failure too), op and the
 * values of vals[0..n), which are sorted in place and copied without
 * duplicates.
 */
static int requirement_init(struct requirement *r, char *key, enum op op, struct span *vals,
                            size_t n)
{
	memset(r, 0, sizeof(*r));
	r->key = key;
	r->op = op;
	if (n == 0)
		return 0;
	qsort(vals, n, sizeof(vals[0]), span_cmp);
	r->values = calloc(n, sizeof(r->values[0]));
	if (r->values == NULL)
		goto nomem;
	for (size_t i = 0; i < n; i++) {
		if (i > 0 && span_cmp(&vals[i - 1], &vals[i]) == 0)
			continue;
		r->values[r->nvalues] = dup_span(vals[i]);
		if (r->values[r->nvalues] == NULL)
			goto nomem;
		r->nvalues++;
	}
	return 0;
nomem:
	requirement_clear(r);
	return tau_error_set(TAU_ENOMEM, "out of memory");
}

static int selector_alloc(tau_selector **out, bool nothing)
{
	tau_selector *sel = calloc(1, sizeof(*sel));

	if (sel == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	sel->nothing = nothing;
	*out = sel;
	return 0;
}

/* Move *r into sel (r is cleared either way). */
static int selector_push(tau_selector *sel, struct requirement *r)
{
	if (sel->nreqs == sel->cap) {
		size_t cap = sel->cap ? 2 * sel->cap : 4;
		struct requirement *reqs;

		if (cap > TAU_SELECTOR_MAX_REQUIREMENTS)
			cap = TAU_SELECTOR_MAX_REQUIREMENTS;
		if (sel->nreqs >= cap) {
			requirement_clear(r);
			return tau_error_set(TAU_ETOOBIG, "selector has more than %d requirements",
			                     TAU_SELECTOR_MAX_REQUIREMENTS);
		}
		reqs = realloc(sel->reqs, cap * sizeof(reqs[0]));
		if (reqs == NULL) {
			requirement_clear(r);
			return tau_error_set(TAU_ENOMEM, "out of memory");
		}
		sel->reqs = reqs;
		sel->cap = cap;
	}
	sel->reqs[sel->nreqs++] = *r;
	memset(r, 0, sizeof(*r));
	return 0;
}

/* Stable sort by key, as the canonical order; n is at most 256. */
static void selector_sort(tau_selector *sel)
{
	for (size_t i = 1; i < sel->nreqs; i++) {
		struct requirement cur = sel->reqs[i];
		size_t j = i;

		while (j > 0 && strcmp(sel->reqs[j - 1].key, cur.key) > 0) {
			sel->reqs[j] = sel->reqs[j - 1];
			j--;
		}
		sel->reqs[j] = cur;
	}
}

/* The end of building sel: sorted into *out when rc is no error, else freed (returns rc). */
static int selector_finish(tau_selector **out, tau_selector *sel, int rc)
{
	if (rc < 0) {
		tau_selector_free(sel);
		return rc;
	}
	selector_sort(sel);
	*out = sel;
	return 0;
}

void tau_selector_free(tau_selector *sel)
{
	if (sel == NULL)
		return;
	for (size_t i = 0; i < sel->nreqs; i++)
		requirement_clear(&sel->reqs[i]);
	free(sel->reqs);
	free(sel);
}

int tau_selector_everything(tau_selector **out)
{
	assert(out != NULL);
	return selector_alloc(out, false);
}

int tau_selector_nothing(tau_selector **out)
{
	assert(out != NULL);
	return selector_alloc(out, true);
}

bool tau_selector_is_everything(const tau_selector *sel)
{
	assert(sel != NULL);
	return !sel->nothing && sel->nreqs == 0;
}

bool tau_selector_is_nothing(const tau_selector *sel)
{
	assert(sel != NULL);
	return sel->nothing;
}

/* ---- string form: lexer ----------------------------------------------- */

enum tok {
	TOK_EOS,
	TOK_IDENT,
	TOK_COMMA,
	TOK_OPEN,
	TOK_CLOSE,
	TOK_NOT,
	TOK_EQUALS,
	TOK_DOUBLE_EQUALS,
	TOK_NOT_EQUALS,
	TOK_GREATER,
	TOK_LESS,
	TOK_IN,
	TOK_NOT_IN,
};

struct token {
	enum tok type;
	struct span lit;
};

struct lexer {
	const char *s;
	size_t len;
	size_t pos;
};

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool is_special(char c)
{
	return c == '=' || c == '!' || c == '(' || c == ')' || c == ',' || c == '>' || c == '<';
}

static struct token lex(struct lexer *lx)
{
	struct token t;
	size_t start;
	char c;

	while (lx->pos < lx->len && is_blank(lx->s[lx->pos]))
		lx->pos++;
	start = lx->pos;
	t.lit.p = lx->s + start;
	if (start == lx->len) {
		t.type = TOK_EOS;
		t.lit.len = 0;
		return t;
	}
	c = lx->s[start];
	if (is_special(c)) {
		/* Longest match: only "==" and "!=" are two bytes long. */
		if ((c == '=' || c == '!') && start + 1 < lx->len && lx->s[start + 1] == '=') {
			t.type = c == '=' ? TOK_DOUBLE_EQUALS : TOK_NOT_EQUALS;
			t.lit.len = 2;
		} else {
			t.lit.len = 1;
			switch (c) {
			case '=':
				t.type = TOK_EQUALS;
				break;
			case '!':
				t.type = TOK_NOT;
				break;
			case '(':
				t.type = TOK_OPEN;
				break;
			case ')':
				t.type = TOK_CLOSE;
				break;
			case ',':
				t.type = TOK_COMMA;
				break;
			case '>':
				t.type = TOK_GREATER;
				break;
			default:
				t.type = TOK_LESS;
				break;
			}
		}
		lx->pos += t.lit.len;
		return t;
	}
	while (lx->pos < lx->len && !is_special(lx->s[lx->pos]) && !is_blank(lx->s[lx->pos]))
		lx->pos++;
	t.lit.len = lx->pos - start;
	if (t.lit.len == 2 && memcmp(t.lit.p, "in", 2) == 0)
		t.type = TOK_IN;
	else if (t.lit.len == 5 && memcmp(t.lit.p, "notin", 5) == 0)
		t.type = TOK_NOT_IN;
	else
		t.type = TOK_IDENT;
	return t;
}

/* ---- string form: parser ---------------------------------------------- */

/* Where a token is read: among values, `in` and `notin` are plain words. */
enum context { CTX_KEY_AND_OPERATOR, CTX_VALUES };

struct parser {
	struct lexer lx;
	struct token cur; /* the lookahead token */
};

static struct token peek(const struct parser *p, enum context ctx)
{
	struct token t = p->cur;

	if (ctx == CTX_VALUES && (t.type == TOK_IN || t.type == TOK_NOT_IN))
		t.type = TOK_IDENT;
	return t;
}

static struct token next(struct parser *p, enum context ctx)
{
	struct token t = peek(p, ctx);

	if (p->cur.type != TOK_EOS)
		p->cur = lex(&p->lx);
	return t;
}

/* Set "found '<tok>', <what>" and return -TAU_EINVAL. */
static int unexpected(struct token t, const char *what)
{
	char lit[SHOW_MAX];

	tau_names_quote(lit, sizeof(lit), t.lit.p, t.lit.len, false);
	return tau_error_set(TAU_EINVAL, "found '%s'%s", lit, what);
}

/* A growing list of value spans, capped at TAU_SELECTOR_MAX_VALUES. */
struct value_list {
	struct span v[TAU_SELECTOR_MAX_VALUES];
	size_t n;
};

static int values_add(struct value_list *vl, struct span s)
{
	if (vl->n == TAU_SELECTOR_MAX_VALUES)
		return tau_error_set(TAU_ETOOBIG, "values: more than %d values",
		                     TAU_SELECTOR_MAX_VALUES);
	vl->v[vl->n++] = s;
	return 0;
}

static const struct span empty_value = {"", 0};

/* After '(' and a ',' or identifier: a list of possibly empty values up to ')'. */
static int parse_identifiers_list(struct parser *p, struct value_list *vl)
{
	int rc;

	for (;;) {
		struct token t = next(p, CTX_VALUES);
		struct token t2;

		switch (t.type) {
		case TOK_IDENT:
			rc = values_add(vl, t.lit);
			if (rc < 0)
				return rc;
			t2 = peek(p, CTX_VALUES);
			if (t2.type == TOK_COMMA)
				continue;
			if (t2.type == TOK_CLOSE)
				return 0;
			return unexpected(t2, ", expected: ',' or ')'");
		case TOK_COMMA:
			/* "(," ",)" and ",," each stand for an empty value. */
			if (vl->n == 0) {
				rc = values_add(vl, empty_value);
				if (rc < 0)
					return rc;
			}
			t2 = peek(p, CTX_VALUES);
			if (t2.type == TOK_CLOSE)
				return values_add(vl, empty_value);
			if (t2.type == TOK_COMMA) {
				next(p, CTX_VALUES);
				rc = values_add(vl, empty_value);
				if (rc < 0)
					return rc;
			}
			continue;
		default:
			return unexpected(t, ", expected: ',', or identifier");
		}
	}
}

/* "(" values ")" for in / notin; "()" is the set {""}. */
static int parse_values(struct parser *p, struct value_list *vl)
{
	struct token t = next(p, CTX_VALUES);
	int rc;

	if (t.type != TOK_OPEN)
		return unexpected(t, " expected: '('");
	t = peek(p, CTX_VALUES);
	switch (t.type) {
	case TOK_IDENT:
	case TOK_COMMA:
		rc = parse_identifiers_list(p, vl);
		if (rc < 0)
			return rc;
		if (next(p, CTX_VALUES).type != TOK_CLOSE)
			return unexpected(t, ", expected: ')'");
		return 0;
	case TOK_CLOSE:
		next(p, CTX_VALUES);
		return values_add(vl, empty_value);
	default:
		return unexpected(t, ", expected: ',', ')' or identifier");
	}
}

/* The one value after = == != > <; nothing before ',' or the end means "". */
static int parse_exact_value(struct parser *p, struct value_list *vl)
{
	struct token t = peek(p, CTX_VALUES);

	if (t.type == TOK_EOS || t.type == TOK_COMMA)
		return values_add(vl, empty_value);
	t = next(p, CTX_VALUES);
	if (t.type != TOK_IDENT)
		return unexpected(t, ", expected: identifier");
	return values_add(vl, t.lit);
}

/* Check what NewRequirement checks on values: integers for gt/lt, label values. */
static int check_parsed_values(struct requirement *r)
{
	char shown[SHOW_MAX];

	if (r->op == OP_GREATER_THAN || r->op == OP_LESS_THAN) {
		if (!parse_int64(r->values[0], &r->bound)) {
			tau_names_quote(shown, sizeof(shown), r->values[0], strlen(r->values[0]),
			                true);
			return tau_error_set(
			        TAU_EINVAL,
			        "values[0]: Invalid value: %s: for 'Gt', 'Lt' operators, "
			        "the value must be an integer",
			        shown);
		}
	}
	for (size_t i = 0; i < r->nvalues; i++) {
		if (tau_names_check_label_value(r->values[i]) < 0)
			return tau_error_wrap("values[%zu][%s]: Invalid value", i, r->key);
	}
	return 0;
}

static int parse_requirement(struct parser *p, struct requirement *out)
{
	struct value_list *vl = NULL;
	struct requirement r = {0};
	char *key = NULL;
	enum op op = OP_EXISTS;
	bool negated = false;
	struct token t;
	int rc = -TAU_EINTERNAL;

	t = next(p, CTX_VALUES);
	if (t.type == TOK_NOT) {
		negated = true;
		t = next(p, CTX_VALUES);
	}
	if (t.type != TOK_IDENT) {
		rc = unexpected(t, ", expected: identifier");
		goto out;
	}
	key = dup_span(t.lit);
	if (key == NULL) {
		rc = tau_error_set(TAU_ENOMEM, "out of memory");
		goto out;
	}
	if (tau_names_check_label_key(key) < 0) {
		rc = tau_error_wrap("key: Invalid value");
		goto out;
	}

	t = peek(p, CTX_VALUES);
	if (negated || t.type == TOK_EOS || t.type == TOK_COMMA) {
		/* "!k" stands alone; whatever follows is the caller's to reject. */
		rc = requirement_init(&r, key, negated ? OP_DOES_NOT_EXIST : OP_EXISTS, NULL, 0);
		key = NULL;
		if (rc < 0)
			goto out;
		goto done;
	}

	t = next(p, CTX_KEY_AND_OPERATOR);
	switch (t.type) {
	case TOK_IN:
		op = OP_IN;
		break;
	case TOK_NOT_IN:
		op = OP_NOT_IN;
		break;
	case TOK_EQUALS:
		op = OP_EQUALS;
		break;
	case TOK_DOUBLE_EQUALS:
		op = OP_DOUBLE_EQUALS;
		break;
	case TOK_NOT_EQUALS:
		op = OP_NOT_EQUALS;
		break;
	case TOK_GREATER:
		op = OP_GREATER_THAN;
		break;
	case TOK_LESS:
		op = OP_LESS_THAN;
		break;
	default:
		rc = unexpected(t, ", expected: in, notin, =, ==, !=, gt, lt");
		goto out;
	}

	vl = malloc(sizeof(*vl));
	if (vl == NULL) {
		rc = tau_error_set(TAU_ENOMEM, "out of memory");
		goto out;
	}
	vl->n = 0;
	if (op == OP_IN || op == OP_NOT_IN)
		rc = parse_values(p, vl);
	else
		rc = parse_exact_value(p, vl);
	if (rc < 0)
		goto out;
	rc = requirement_init(&r, key, op, vl->v, vl->n);
	key = NULL;
	if (rc < 0)
		goto out;
	rc = check_parsed_values(&r);
	if (rc < 0)
		goto out;
done:
	*out = r;
	memset(&r, 0, sizeof(r));
	rc = 0;
out:
	requirement_clear(&r);
	free(key);
	free(vl);
	return rc;
}

int tau_selector_parse(tau_selector **out, const char *s)
{
	tau_selector *sel = NULL;
	struct requirement r = {0};
	struct parser p;
	size_t len = 0;
	int rc = -TAU_EINTERNAL;

	assert(out != NULL && s != NULL);
	while (len <= TAU_SELECTOR_MAX_STRING && s[len] != '\0')
		len++;
	if (len > TAU_SELECTOR_MAX_STRING)
		return tau_error_set(TAU_ETOOBIG, "label selector is longer than %d bytes",
		                     TAU_SELECTOR_MAX_STRING);

	rc = selector_alloc(&sel, false);
	if (rc < 0)
		goto out;
	p.lx.s = s;
	p.lx.len = len;
	p.lx.pos = 0;
	p.cur = lex(&p.lx);
	for (;;) {
		struct token t = peek(&p, CTX_VALUES);

		if (t.type == TOK_EOS)
			break;
		if (t.type != TOK_IDENT && t.type != TOK_NOT) {
			rc = unexpected(t, ", expected: !, identifier, or 'end of string'");
			goto out;
		}
		rc = parse_requirement(&p, &r);
		if (rc < 0) {
			rc = tau_error_wrap("unable to parse requirement");
			goto out;
		}
		rc = selector_push(sel, &r);
		if (rc < 0)
			goto out;
		t = next(&p, CTX_VALUES);
		if (t.type == TOK_EOS)
			break;
		if (t.type != TOK_COMMA) {
			rc = unexpected(t, ", expected: ',' or 'end of string'");
			goto out;
		}
		t = peek(&p, CTX_VALUES);
		if (t.type != TOK_IDENT && t.type != TOK_NOT) {
			rc = unexpected(t, ", expected: identifier after ','");
			goto out;
		}
	}
out:
	return selector_finish(out, sel, rc);
}

/* ---- JSON form -------------------------------------------------------- */

/* The last member called name (Go's decoder keeps the last duplicate). */
static const cJSON *member(const cJSON *obj, const char *name)
{
	const cJSON *found = NULL;

	for (const cJSON *m = obj->child; m != NULL; m = m->next) {
		if (m->string != NULL && strcmp(m->string, name) == 0)
			found = m;
	}
	if (found != NULL && cJSON_IsNull(found))
		return NULL;
	return found;
}

/* A string, or "" for a JSON null (Go decodes null as the zero value); NULL otherwise. */
static const char *string_value(const cJSON *item)
{
	if (cJSON_IsNull(item))
		return "";
	if (!cJSON_IsString(item) || item->valuestring == NULL)
		return NULL;
	return item->valuestring;
}

/* A string member that may be absent or null (then ""); NULL on a wrong type. */
static const char *string_member(const cJSON *obj, const char *name)
{
	const cJSON *m = member(obj, name);

	return m == NULL ? "" : string_value(m);
}

static bool later_duplicate(const cJSON *m)
{
	for (const cJSON *n = m->next; n != NULL; n = n->next) {
		if (n->string != NULL && strcmp(n->string, m->string) == 0)
			return true;
	}
	return false;
}

static int from_match_labels(tau_selector *sel, const cJSON *labels)
{
	struct requirement r = {0};
	int rc;

	for (const cJSON *m = labels->child; m != NULL; m = m->next) {
		const char *value = string_value(m);
		struct span v;
		char *key;

		if (m->string == NULL || later_duplicate(m))
			continue;
		if (value == NULL) {
			char shown[SHOW_MAX];

			tau_names_quote(shown, sizeof(shown), m->string, strlen(m->string), true);
			return tau_error_set(
			        TAU_ETYPE, "matchLabels: the value of %s must be a string", shown);
		}
		if (tau_names_check_label_key(m->string) < 0 ||
		    tau_names_check_label_value(value) < 0)
			return tau_error_wrap("matchLabels: Invalid value");
		key = dup_span((struct span){m->string, strlen(m->string)});
		if (key == NULL)
			return tau_error_set(TAU_ENOMEM, "out of memory");
		v.p = value;
		v.len = strlen(value);
		rc = requirement_init(&r, key, OP_EQUALS, &v, 1);
		if (rc < 0)
			return rc;
		rc = selector_push(sel, &r);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int from_match_expression(tau_selector *sel, const cJSON *expr, size_t idx)
{
	struct span *vals = NULL;
	struct requirement r = {0};
	const cJSON *values;
	const char *key;
	const char *opname;
	char *key_copy = NULL;
	size_t n = 0;
	enum op op;
	int rc = -TAU_EINTERNAL;

	if (!cJSON_IsObject(expr))
		return tau_error_set(TAU_ETYPE, "matchExpressions[%zu]: must be an object", idx);
	key = string_member(expr, "key");
	if (key == NULL)
		return tau_error_set(TAU_ETYPE, "matchExpressions[%zu].key: must be a string", idx);
	opname = string_member(expr, "operator");
	if (opname == NULL)
		return tau_error_set(TAU_ETYPE, "matchExpressions[%zu].operator: must be a string",
		                     idx);
	values = member(expr, "values");
	if (values != NULL) {
		if (!cJSON_IsArray(values))
			return tau_error_set(TAU_ETYPE,
			                     "matchExpressions[%zu].values: must be an array", idx);
		for (const cJSON *v = values->child; v != NULL; v = v->next) {
			if (n == TAU_SELECTOR_MAX_VALUES)
				return tau_error_set(
				        TAU_ETOOBIG,
				        "matchExpressions[%zu].values: more than %d values", idx,
				        TAU_SELECTOR_MAX_VALUES);
			if (string_value(v) == NULL)
				return tau_error_set(
				        TAU_ETYPE,
				        "matchExpressions[%zu].values[%zu]: must be a string", idx,
				        n);
			n++;
		}
	}

	/* The API server's order: operator against values, then the key. */
	if (strcmp(opname, "In") == 0 || strcmp(opname, "NotIn") == 0) {
		op = opname[0] == 'I' ? OP_IN : OP_NOT_IN;
		if (n == 0)
			return tau_error_set(
			        TAU_EINVAL,
			        "matchExpressions[%zu].values: Required value: must be "
			        "specified when `operator` is 'In' or 'NotIn'",
			        idx);
	} else if (strcmp(opname, "Exists") == 0 || strcmp(opname, "DoesNotExist") == 0) {
		op = opname[0] == 'E' ? OP_EXISTS : OP_DOES_NOT_EXIST;
		if (n != 0)
			return tau_error_set(
			        TAU_EINVAL,
			        "matchExpressions[%zu].values: Forbidden: may not be "
			        "specified when `operator` is 'Exists' or 'DoesNotExist'",
			        idx);
	} else {
		char shown[SHOW_MAX];

		tau_names_quote(shown, sizeof(shown), opname, strlen(opname), true);
		return tau_error_set(
		        TAU_EINVAL,
		        "matchExpressions[%zu].operator: Invalid value: %s: not a valid "
		        "selector operator",
		        idx, shown);
	}
	if (tau_names_check_label_key(key) < 0)
		return tau_error_wrap("matchExpressions[%zu].key: Invalid value", idx);

	if (n != 0) {
		size_t i = 0;

		vals = calloc(n, sizeof(vals[0]));
		if (vals == NULL) {
			rc = tau_error_set(TAU_ENOMEM, "out of memory");
			goto out;
		}
		for (const cJSON *v = values->child; v != NULL; v = v->next, i++) {
			const char *value = string_value(v);

			if (tau_names_check_label_value(value) < 0) {
				rc = tau_error_wrap(
				        "matchExpressions[%zu].values[%zu]: Invalid value", idx, i);
				goto out;
			}
			vals[i].p = value;
			vals[i].len = strlen(value);
		}
	}
	key_copy = dup_span((struct span){key, strlen(key)});
	if (key_copy == NULL) {
		rc = tau_error_set(TAU_ENOMEM, "out of memory");
		goto out;
	}
	rc = requirement_init(&r, key_copy, op, vals, n);
	key_copy = NULL;
	if (rc < 0)
		goto out;
	rc = selector_push(sel, &r);
out:
	free(key_copy);
	free(vals);
	return rc;
}

int tau_selector_from_json(tau_selector **out, const cJSON *label_selector)
{
	tau_selector *sel = NULL;
	const cJSON *labels;
	const cJSON *exprs;
	size_t nlabels = 0;
	size_t nexprs = 0;
	size_t idx = 0;
	int rc = -TAU_EINTERNAL;

	assert(out != NULL);
	if (label_selector == NULL || cJSON_IsNull(label_selector))
		return selector_alloc(out, true);
	if (!cJSON_IsObject(label_selector))
		return tau_error_set(TAU_ETYPE, "labelSelector: must be an object");
	labels = member(label_selector, "matchLabels");
	if (labels != NULL && !cJSON_IsObject(labels))
		return tau_error_set(TAU_ETYPE, "matchLabels: must be an object");
	exprs = member(label_selector, "matchExpressions");
	if (exprs != NULL && !cJSON_IsArray(exprs))
		return tau_error_set(TAU_ETYPE, "matchExpressions: must be an array");

	/* Count before building anything; stop counting past the cap. */
	for (const cJSON *m = labels ? labels->child : NULL;
	     m != NULL && nlabels <= TAU_SELECTOR_MAX_REQUIREMENTS; m = m->next)
		nlabels++;
	for (const cJSON *m = exprs ? exprs->child : NULL;
	     m != NULL && nexprs <= TAU_SELECTOR_MAX_REQUIREMENTS; m = m->next)
		nexprs++;
	if (nlabels + nexprs > TAU_SELECTOR_MAX_REQUIREMENTS)
		return tau_error_set(TAU_ETOOBIG, "labelSelector: more than %d requirements",
		                     TAU_SELECTOR_MAX_REQUIREMENTS);

	rc = selector_alloc(&sel, false);
	if (rc < 0)
		goto out;
	if (labels != NULL) {
		rc = from_match_labels(sel, labels);
		if (rc < 0)
			goto out;
	}
	for (const cJSON *e = exprs ? exprs->child : NULL; e != NULL; e = e->next, idx++) {
		rc = from_match_expression(sel, e, idx);
		if (rc < 0)
			goto out;
	}
out:
	return selector_finish(out, sel, rc);
}

/* ---- matching --------------------------------------------------------- */

static bool has_value(const struct requirement *r, const char *value)
{
	for (size_t i = 0; i < r->nvalues; i++) {
		if (strcmp(r->values[i], value) == 0)
			return true;
	}
	return false;
}

/* value is the object's label for r->key, or NULL when it has none. */
static bool requirement_matches(const struct requirement *r, const char *value)
{
	int64_t n;

	switch (r->op) {
	case OP_IN:
	case OP_EQUALS:
	case OP_DOUBLE_EQUALS:
		return value != NULL && has_value(r, value);
	case OP_NOT_IN:
	case OP_NOT_EQUALS:
		return value == NULL || !has_value(r, value);
	case OP_EXISTS:
		return value != NULL;
	case OP_DOES_NOT_EXIST:
		return value == NULL;
	case OP_GREATER_THAN:
	case OP_LESS_THAN:
		if (value == NULL || !parse_int64(value, &n))
			return false;
		return r->op == OP_GREATER_THAN ? n > r->bound : n < r->bound;
	}
	return false;
}

static const char *json_label(const cJSON *labels, const char *key)
{
	const char *found = NULL;

	if (labels == NULL || !cJSON_IsObject(labels))
		return NULL;
	for (const cJSON *m = labels->child; m != NULL; m = m->next) {
		if (m->string != NULL && cJSON_IsString(m) && m->valuestring != NULL &&
		    strcmp(m->string, key) == 0)
			found = m->valuestring;
	}
	return found;
}

bool tau_selector_matches(const tau_selector *sel, const cJSON *labels)
{
	assert(sel != NULL);
	if (sel->nothing)
		return false;
	for (size_t i = 0; i < sel->nreqs; i++) {
		const struct requirement *r = &sel->reqs[i];

		if (!requirement_matches(r, json_label(labels, r->key)))
			return false;
	}
	return true;
}

bool tau_selector_matches_pairs(const tau_selector *sel, const char *const *keys,
                                const char *const *values, size_t n)
{
	assert(sel != NULL);
	assert(n == 0 || (keys != NULL && values != NULL));
	if (sel->nothing)
		return false;
	for (size_t i = 0; i < sel->nreqs; i++) {
		const struct requirement *r = &sel->reqs[i];
		const char *value = NULL;

		for (size_t j = 0; j < n; j++) {
			assert(keys[j] != NULL && values[j] != NULL);
			if (strcmp(keys[j], r->key) == 0)
				value = values[j];
		}
		if (!requirement_matches(r, value))
			return false;
	}
	return true;
}

/* ---- printing --------------------------------------------------------- */

static const char *const op_text[] = {
        [OP_IN] = " in ",          [OP_NOT_IN] = " notin ", [OP_EQUALS] = "=",
        [OP_DOUBLE_EQUALS] = "==", [OP_NOT_EQUALS] = "!=",  [OP_EXISTS] = "",
        [OP_DOES_NOT_EXIST] = "",  [OP_GREATER_THAN] = ">", [OP_LESS_THAN] = "<",
};

/*
 * Write the canonical form into buf (when not NULL) and return its length.
 * Lengths are bounded by the caps (at most 256 requirements of a 317-byte
 * key and 256 values of 63 bytes: a few MiB), so size_t cannot overflow.
 */
static size_t render(const tau_selector *sel, char *buf)
{
	size_t o = 0;

#define PUT(p, n)                                                                                  \
	do {                                                                                       \
		if (buf != NULL)                                                                   \
			memcpy(buf + o, (p), (n));                                                 \
		o += (n);                                                                          \
	} while (0)

	for (size_t i = 0; i < sel->nreqs; i++) {
		const struct requirement *r = &sel->reqs[i];
		bool set = r->op == OP_IN || r->op == OP_NOT_IN;

		if (i > 0)
			PUT(",", 1);
		if (r->op == OP_DOES_NOT_EXIST)
			PUT("!", 1);
		PUT(r->key, strlen(r->key));
		if (r->op == OP_EXISTS || r->op == OP_DOES_NOT_EXIST)
			continue;
		PUT(op_text[r->op], strlen(op_text[r->op]));
		if (set)
			PUT("(", 1);
		for (size_t j = 0; j < r->nvalues; j++) {
			if (j > 0)
				PUT(",", 1);
			PUT(r->values[j], strlen(r->values[j]));
		}
		if (set)
			PUT(")", 1);
	}
#undef PUT
	return o;
}

int tau_selector_to_string(char **out, const tau_selector *sel)
{
	size_t len;
	char *s;

	assert(out != NULL && sel != NULL);
	if (sel->nothing)
		return tau_error_set(TAU_EINVAL,
		                     "the nothing selector has no string form (\"\" selects "
		                     "everything)");
	len = render(sel, NULL);
	s = malloc(len + 1);
	if (s == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	render(sel, s);
	s[len] = '\0';
	*out = s;
	return 0;
}
