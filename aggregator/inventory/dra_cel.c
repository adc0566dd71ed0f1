/*
 * dra_cel.c - DeviceClass selectors: the CEL subset real GPU classes use (dra_cel.h).
 *
 * The one idea: an expression in the subset is a flat conjunction of
 * comparisons, each of one device field against one literal.  So compiling is
 * a tokenizer and a recursive-descent reader that either produces that list
 * or refuses, naming the offset; evaluating walks the list.  Nothing else of
 * CEL is read, so no expression can do more than compare fields.
 *
 * Evaluation keeps CEL's `&&`: false wins over an error (false && error is
 * false), an error wins over true.
 */
#include "dra_cel.h"
#include "sorted.h"

#include "tau/error.h"
#include "tau/names.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A string literal or a domain longer than this is refused (names are <= 253 bytes). */
#define LITERAL_MAX 1024

typedef enum tok_kind {
	TOK_END = 0,
	TOK_IDENT,
	TOK_STRING,
	TOK_INT,
	TOK_OP, /* == != < <= > >= */
	TOK_AND,
	TOK_LPAREN,
	TOK_RPAREN,
	TOK_LBRACKET,
	TOK_RBRACKET,
	TOK_DOT
} tok_kind;

typedef enum cmp_op { OP_EQ = 0, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE, OP_NONE } cmp_op;

typedef enum term_source { SRC_DRIVER = 0, SRC_ATTRIBUTE, SRC_CAPACITY } term_source;

typedef enum cap_method { CAP_COMPARE_TO = 0, CAP_GREATER, CAP_LESS } cap_method;

typedef struct term {
	term_source source;
	char *name; /* "domain/identifier" (attributes, capacity) */
	cmp_op op;  /* OP_NONE: a bool attribute alone, or isGreaterThan / isLessThan */
	tau_dra_value_kind literal_kind;
	char *literal_text;
	int64_t literal_int;
	bool literal_bool;
	cap_method method;
	tau_quantity quantity;
} term;

struct tau_dra_cel {
	term *terms;
	size_t n_terms;
};

typedef struct reader {
	const char *src;
	size_t len;
	size_t pos; /* next byte to scan */
	/* the current token */
	tok_kind kind;
	size_t start;
	char text[LITERAL_MAX + 1]; /* identifier or decoded string */
	int64_t integer;
	cmp_op op;
	tau_dra_cel *out;
} reader;

static int refuse(const reader *r, size_t at, const char *why)
{
	char quoted[200];

	return tau_error_set(TAU_EINVAL,
	                     "selector %s is outside the CEL subset the pool evaluates: %s at "
	                     "offset %zu",
	                     tau_names_quote(quoted, sizeof(quoted), r->src, r->len, true), why,
	                     at);
}

static int scan_string(reader *r)
{
	char q = r->src[r->pos];
	size_t n = 0;

	if (r->pos + 2 < r->len && r->src[r->pos + 1] == q && r->src[r->pos + 2] == q)
		return refuse(r, r->pos, "triple-quoted strings are not read");
	r->pos++;
	for (;;) {
		char c;

		if (r->pos >= r->len)
			return refuse(r, r->start, "unterminated string");
		c = r->src[r->pos++];
		if (c == q)
			break;
		if (c == '\n' || c == '\r')
			return refuse(r, r->start, "newline in a string");
		if (c == '\\') {
			if (r->pos >= r->len)
				return refuse(r, r->start, "unterminated string");
			c = r->src[r->pos++];
			if (c != '\\' && c != '\'' && c != '"')
				return refuse(r, r->pos - 2,
				              "only \\\\, \\' and \\\" escapes are read");
		}
		if (n >= LITERAL_MAX)
			return refuse(r, r->start, "string literal too long");
		r->text[n++] = c;
	}
	r->text[n] = '\0';
	r->kind = TOK_STRING;
	return 0;
}

static int scan_int(reader *r)
{
	bool neg = false;
	uint64_t v = 0;
	/* -INT64_MIN does not fit, so the magnitude limit depends on the sign */
	uint64_t limit = (uint64_t)INT64_MAX;

	if (r->src[r->pos] == '-') {
		neg = true;
		limit++;
		r->pos++;
		if (r->pos >= r->len || !isdigit((unsigned char)r->src[r->pos]))
			return refuse(r, r->start, "unary minus is read only before an integer");
	}
	if (r->src[r->pos] == '0' && r->pos + 1 < r->len &&
	    isalnum((unsigned char)r->src[r->pos + 1]))
		return refuse(r, r->start, "only decimal integers are read");
	while (r->pos < r->len && isdigit((unsigned char)r->src[r->pos])) {
		unsigned d = (unsigned)(r->src[r->pos] - '0');

		if (v > (limit - d) / 10)
			return refuse(r, r->start, "integer out of int64 range");
		v = v * 10 + d;
		r->pos++;
	}
	if (r->pos < r->len && (isalnum((unsigned char)r->src[r->pos]) || r->src[r->pos] == '.' ||
	                        r->src[r->pos] == '_'))
		return refuse(r, r->start,
		              "only int literals are read (no uint, double or exponent)");
	r->integer = neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
	r->kind = TOK_INT;
	return 0;
}

/* The tokens of one character and nothing else (TOK_END: not one of them). */
static const tok_kind single_char_tokens[UCHAR_MAX + 1] = {
        ['('] = TOK_LPAREN,   [')'] = TOK_RPAREN, ['['] = TOK_LBRACKET,
        [']'] = TOK_RBRACKET, ['.'] = TOK_DOT,
};

/* Scan the next token into r. */
static int next(reader *r)
{
	char c;

	while (r->pos < r->len && (r->src[r->pos] == ' ' || r->src[r->pos] == '\t' ||
	                           r->src[r->pos] == '\n' || r->src[r->pos] == '\r'))
		r->pos++;
	r->start = r->pos;
	if (r->pos >= r->len) {
		r->kind = TOK_END;
		return 0;
	}
	c = r->src[r->pos];
	if (isalpha((unsigned char)c) || c == '_') {
		size_t n = 0;

		while (r->pos < r->len &&
		       (isalnum((unsigned char)r->src[r->pos]) || r->src[r->pos] == '_')) {
			if (n >= LITERAL_MAX)
				return refuse(r, r->start, "identifier too long");
			r->text[n++] = r->src[r->pos++];
		}
		r->text[n] = '\0';
		r->kind = TOK_IDENT;
		return 0;
	}
	if (c == '"' || c == '\'')
		return scan_string(r);
	if (isdigit((unsigned char)c) || c == '-')
		return scan_int(r);
	r->pos++;
	if (single_char_tokens[(unsigned char)c] != TOK_END) {
		r->kind = single_char_tokens[(unsigned char)c];
		return 0;
	}
	switch (c) {
	case '&':
		if (r->pos < r->len && r->src[r->pos] == '&') {
			r->pos++;
			r->kind = TOK_AND;
			return 0;
		}
		break;
	case '=':
	case '!':
	case '<':
	case '>': {
		bool eq = r->pos < r->len && r->src[r->pos] == '=';

		if (eq)
			r->pos++;
		r->kind = TOK_OP;
		if (c == '=' && eq)
			r->op = OP_EQ;
		else if (c == '!' && eq)
			r->op = OP_NE;
		else if (c == '<')
			r->op = eq ? OP_LE : OP_LT;
		else if (c == '>')
			r->op = eq ? OP_GE : OP_GT;
		else if (c == '!')
			return refuse(r, r->start, "negation (!) is not read");
		else
			return refuse(r, r->start, "assignment (=) is not CEL");
		return 0;
	}
	case '|':
		return refuse(r, r->start, "disjunction (||) is not read");
	default:
		break;
	}
	{
		char what[64];

		snprintf(what, sizeof(what), "unexpected character '%c'",
		         isprint((unsigned char)c) ? c : '?');
		return refuse(r, r->start, what);
	}
}

static int expect(reader *r, tok_kind kind, const char *what)
{
	if (r->kind != kind)
		return refuse(r, r->start, what);
	return next(r);
}

static int expect_ident(reader *r, const char *word, const char *what)
{
	if (r->kind != TOK_IDENT || strcmp(r->text, word) != 0)
		return refuse(r, r->start, what);
	return next(r);
}

static void term_clear(term *t)
{
	free(t->name);
	free(t->literal_text);
	memset(t, 0, sizeof(*t));
}

/* `quantity("40Gi")` (the current token is `quantity`) */
static int read_quantity(reader *r, tau_quantity *q)
{
	size_t at;

	if (expect_ident(r, "quantity", "expected quantity(\"...\")") < 0 ||
	    expect(r, TOK_LPAREN, "expected ( after quantity") < 0)
		return -TAU_EINVAL;
	if (r->kind != TOK_STRING)
		return refuse(r, r->start, "quantity() takes one string literal");
	at = r->start;
	if (tau_quantity_parse_str(q, r->text) < 0) {
		char why[TAU_ERROR_MSG_MAX];

		snprintf(why, sizeof(why), "%s", tau_error_last()->msg);
		return refuse(r, at, why);
	}
	if (next(r) < 0 || expect(r, TOK_RPAREN, "expected ) after the quantity") < 0)
		return -TAU_EINVAL;
	return 0;
}

/* The literal after an operator, into t. */
static int read_literal(reader *r, term *t)
{
	if (r->kind == TOK_STRING) {
		t->literal_kind = TAU_DRA_VALUE_STRING;
		t->literal_text = strdup(r->text);
		if (t->literal_text == NULL)
			return tau_error_set(TAU_ENOMEM, "out of memory compiling a selector");
	} else if (r->kind == TOK_INT) {
		t->literal_kind = TAU_DRA_VALUE_INT;
		t->literal_int = r->integer;
	} else if (r->kind == TOK_IDENT &&
	           (strcmp(r->text, "true") == 0 || strcmp(r->text, "false") == 0)) {
		t->literal_kind = TAU_DRA_VALUE_BOOL;
		t->literal_bool = r->text[0] == 't';
	} else {
		return refuse(r, r->start, "expected a string, int or bool literal");
	}
	if (t->literal_kind != TAU_DRA_VALUE_INT && t->op != OP_EQ && t->op != OP_NE)
		return refuse(r, r->start, "only == and != compare strings and bools");
	return next(r);
}

/*
 * The comparison operator at r, then the literal it compares to into t: one of kind `want`
 * (else refused with `why`), or of any kind when `want` is TOK_END.
 */
static int read_compared(reader *r, term *t, tok_kind want, const char *why)
{
	t->op = r->op;
	if (next(r) < 0)
		return -TAU_EINVAL;
	if (want != TOK_END && r->kind != want)
		return refuse(r, r->start, why);
	return read_literal(r, t);
}

/* device.driver / device.attributes["d"].id / device.capacity["d"].id.method(...) */
static int read_comparison(reader *r, term *t)
{
	char domain[LITERAL_MAX + 1];

	if (expect_ident(r, "device",
	                 "expected device.driver, device.attributes or "
	                 "device.capacity") < 0 ||
	    expect(r, TOK_DOT, "expected . after device") < 0)
		return -TAU_EINVAL;
	if (r->kind == TOK_IDENT && strcmp(r->text, "driver") == 0) {
		t->source = SRC_DRIVER;
		if (next(r) < 0)
			return -TAU_EINVAL;
		if (r->kind != TOK_OP || (r->op != OP_EQ && r->op != OP_NE))
			return refuse(r, r->start, "device.driver is read only with == or !=");
		return read_compared(r, t, TOK_STRING,
		                     "device.driver compares to a string literal");
	}
	if (r->kind != TOK_IDENT ||
	    (strcmp(r->text, "attributes") != 0 && strcmp(r->text, "capacity") != 0))
		return refuse(r, r->start,
		              "expected device.driver, device.attributes or "
		              "device.capacity");
	t->source = r->text[0] == 'a' ? SRC_ATTRIBUTE : SRC_CAPACITY;
	if (next(r) < 0 || expect(r, TOK_LBRACKET, "expected [\"domain\"]") < 0)
		return -TAU_EINVAL;
	if (r->kind != TOK_STRING || r->text[0] == '\0')
		return refuse(r, r->start, "the domain is a non-empty string literal");
	memcpy(domain, r->text, strlen(r->text) + 1);
	if (next(r) < 0 || expect(r, TOK_RBRACKET, "expected ] after the domain") < 0 ||
	    expect(r, TOK_DOT, "expected .name after the domain (map indexing is not read)") < 0)
		return -TAU_EINVAL;
	if (r->kind != TOK_IDENT)
		return refuse(r, r->start, "expected a name after the domain");
	{
		size_t n = strlen(domain) + 1 + strlen(r->text) + 1;

		t->name = malloc(n);
		if (t->name == NULL)
			return tau_error_set(TAU_ENOMEM, "out of memory compiling a selector");
		snprintf(t->name, n, "%s/%s", domain, r->text);
	}
	if (next(r) < 0)
		return -TAU_EINVAL;
	if (t->source == SRC_ATTRIBUTE) {
		if (r->kind == TOK_DOT)
			return refuse(r, r->start,
			              "methods of attributes (startsWith, compareTo, "
			              "...) are not read");
		if (r->kind != TOK_OP) {
			t->op = OP_NONE; /* a bool attribute alone */
			return 0;
		}
		return read_compared(r, t, TOK_END, NULL);
	}
	if (expect(r, TOK_DOT,
	           "a capacity is read only through compareTo, isGreaterThan or "
	           "isLessThan") < 0)
		return -TAU_EINVAL;
	if (r->kind == TOK_IDENT && strcmp(r->text, "compareTo") == 0)
		t->method = CAP_COMPARE_TO;
	else if (r->kind == TOK_IDENT && strcmp(r->text, "isGreaterThan") == 0)
		t->method = CAP_GREATER;
	else if (r->kind == TOK_IDENT && strcmp(r->text, "isLessThan") == 0)
		t->method = CAP_LESS;
	else
		return refuse(r, r->start,
		              "a capacity is read only through compareTo, "
		              "isGreaterThan or isLessThan");
	if (next(r) < 0 || expect(r, TOK_LPAREN, "expected ( after the method") < 0 ||
	    read_quantity(r, &t->quantity) < 0 ||
	    expect(r, TOK_RPAREN, "expected ) after the method's argument") < 0)
		return -TAU_EINVAL;
	if (t->method != CAP_COMPARE_TO) {
		t->op = OP_NONE;
		if (r->kind == TOK_OP)
			return refuse(r, r->start, "isGreaterThan/isLessThan are read alone");
		return 0;
	}
	if (r->kind != TOK_OP)
		return refuse(r, r->start, "compareTo() is read only compared to an int");
	return read_compared(r, t, TOK_INT, "compareTo() is read only compared to an int");
}

static int read_conjunction(reader *r, unsigned depth);

static int read_term(reader *r, unsigned depth)
{
	term t = {0};
	tau_dra_cel *c = r->out;

	if (r->kind == TOK_LPAREN) {
		if (depth >= 8)
			return refuse(r, r->start, "parentheses nested too deep");
		if (next(r) < 0 || read_conjunction(r, depth + 1) < 0)
			return -TAU_EINVAL;
		return expect(r, TOK_RPAREN, "expected )");
	}
	if (c->n_terms >= TAU_DRA_CEL_MAX_TERMS)
		return tau_error_set(TAU_ETOOBIG, "selector has more than %d comparisons",
		                     TAU_DRA_CEL_MAX_TERMS);
	if (read_comparison(r, &t) < 0) {
		term_clear(&t);
		return -tau_error_last()->code;
	}
	c->terms[c->n_terms++] = t;
	return 0;
}

static int read_conjunction(reader *r, unsigned depth)
{
	int rc = read_term(r, depth);

	while (rc == 0 && r->kind == TOK_AND) {
		rc = next(r);
		if (rc == 0)
			rc = read_term(r, depth);
	}
	return rc;
}

void tau_dra_cel_free(tau_dra_cel *cel)
{
	if (cel == NULL)
		return;
	for (size_t i = 0; i < cel->n_terms; i++)
		term_clear(&cel->terms[i]);
	free(cel->terms);
	free(cel);
}

int tau_dra_cel_compile(tau_dra_cel **out, const char *expression)
{
	reader *r = NULL;
	tau_dra_cel *c = NULL;
	int rc = -TAU_ENOMEM;
	size_t len = strlen(expression);

	if (len > TAU_DRA_CEL_EXPRESSION_MAX)
		return tau_error_set(TAU_ETOOBIG, "selector is %zu bytes, over the API's %d", len,
		                     TAU_DRA_CEL_EXPRESSION_MAX);
	r = calloc(1, sizeof(*r));
	c = calloc(1, sizeof(*c));
	if (r == NULL || c == NULL ||
	    (c->terms = calloc(TAU_DRA_CEL_MAX_TERMS, sizeof(*c->terms))) == NULL) {
		tau_error_set(TAU_ENOMEM, "out of memory compiling a selector");
		goto out;
	}
	r->src = expression;
	r->len = len;
	r->out = c;
	rc = next(r);
	if (rc == 0 && r->kind == TOK_END)
		rc = refuse(r, 0, "empty expression");
	if (rc == 0)
		rc = read_conjunction(r, 0);
	if (rc == 0 && r->kind != TOK_END)
		rc = refuse(r, r->start,
		            r->kind == TOK_OP ? "a comparison of a comparison is not read"
		                              : "expected && or the end");
	if (rc < 0)
		goto out;
	*out = c;
	c = NULL;
out:
	tau_dra_cel_free(c);
	free(r);
	return rc;
}

const tau_dra_value *tau_dra_value_find(const tau_dra_value *values, size_t n, const char *name)
{
	bool found;
	size_t i = tau_sorted_index(values, n, sizeof(*values), name, &found);

	return found ? &values[i] : NULL;
}

static bool holds(cmp_op op, int c)
{
	switch (op) {
	case OP_EQ:
		return c == 0;
	case OP_NE:
		return c != 0;
	case OP_LT:
		return c < 0;
	case OP_LE:
		return c <= 0;
	case OP_GT:
		return c > 0;
	case OP_GE:
		return c >= 0;
	case OP_NONE:
		break;
	}
	return false;
}

static const char *kind_name(tau_dra_value_kind k)
{
	static const char *const names[] = {"string", "int", "bool", "version", "quantity"};

	return (size_t)k < sizeof(names) / sizeof(names[0]) ? names[k] : "?";
}

static int eval_term(bool *out, const term *t, const tau_dra_device_view *d)
{
	const tau_dra_value *v;

	if (t->source == SRC_DRIVER) {
		*out = holds(t->op, strcmp(d->driver != NULL ? d->driver : "", t->literal_text));
		return 0;
	}
	if (t->source == SRC_CAPACITY) {
		int c;

		v = tau_dra_value_find(d->capacity, d->n_capacity, t->name);
		if (v == NULL)
			return tau_error_set(TAU_EINVAL, "no such key: capacity %s", t->name);
		c = tau_quantity_cmp(&v->quantity, &t->quantity);
		if (t->method == CAP_GREATER)
			*out = c > 0;
		else if (t->method == CAP_LESS)
			*out = c < 0;
		else { /* compareTo gives -1, 0 or 1, compared as an int */
			int64_t r = (c > 0) - (c < 0);

			*out = holds(t->op, (r > t->literal_int) - (r < t->literal_int));
		}
		return 0;
	}
	v = tau_dra_value_find(d->attributes, d->n_attributes, t->name);
	if (v == NULL)
		return tau_error_set(TAU_EINVAL, "no such key: attribute %s", t->name);
	if (t->op == OP_NONE) {
		if (v->kind != TAU_DRA_VALUE_BOOL)
			return tau_error_set(TAU_EINVAL, "attribute %s is a %s, not a bool",
			                     t->name, kind_name(v->kind));
		*out = v->boolean;
		return 0;
	}
	if (v->kind != t->literal_kind)
		return tau_error_set(TAU_EINVAL,
		                     "no such overload: attribute %s is a %s, compared "
		                     "to a %s",
		                     t->name, kind_name(v->kind), kind_name(t->literal_kind));
	switch (v->kind) {
	case TAU_DRA_VALUE_STRING:
		*out = holds(t->op, strcmp(v->text, t->literal_text));
		return 0;
	case TAU_DRA_VALUE_INT:
		*out = holds(t->op, (v->integer > t->literal_int) - (v->integer < t->literal_int));
		return 0;
	case TAU_DRA_VALUE_BOOL:
		*out = holds(t->op, v->boolean != t->literal_bool);
		return 0;
	default:
		break;
	}
	return tau_error_set(TAU_EINTERNAL, "attribute %s: unexpected kind", t->name);
}

int tau_dra_cel_eval(bool *out, const tau_dra_cel *cel, const tau_dra_device_view *device)
{
	bool failed = false;
	tau_error first = {0};

	for (size_t i = 0; i < cel->n_terms; i++) {
		bool v = false;

		if (eval_term(&v, &cel->terms[i], device) < 0) {
			if (!failed)
				first = *tau_error_last();
			failed = true;
			continue;
		}
		if (!v) {
			*out = false; /* false && error is false */
			return 0;
		}
	}
	if (failed)
		return tau_error_set(first.code, "%s", first.msg);
	*out = true;
	return 0;
}
