/*
 * team_doc.c - the pieces every `tau team` document is made of, and the list.
 *
 * The one idea: a team document is built from the objects the budget
 * controller wrote, member by member, with unset values as null and every
 * quantity in libtau's canonical form (never a double); what does not parse
 * becomes null and a warning in the document, never an error.  The verdicts
 * (mode, Ready) and `tau team list`'s document and table live here too, as
 * the smallest view made of these pieces.
 */
#include "team_internal.h"

#include "output.h"
#include "workspace.h"

#include "tau/error.h"
#include "tau/json.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* Small readers and writers                                                                   */

const char *tau_cli_team_or_none(const char *s)
{
	return s != NULL ? s : TAU_CLI_TEAM_NONE;
}

/* Add a string member, or null when v is NULL. */
void tau_cli_team_put(cJSON *o, const char *key, const char *v)
{
	cJSON_AddItemToObject(o, key, v != NULL ? cJSON_CreateString(v) : cJSON_CreateNull());
}

/* Add the integer at `path` of src, or null when it is absent or not an exact integer. */
void tau_cli_team_put_int(cJSON *o, const char *key, const cJSON *src, const char *path)
{
	int64_t v = 0;

	if (src != NULL && tau_json_get_int(&v, src, path) == 0)
		cJSON_AddNumberToObject(o, key, (double)v);
	else
		cJSON_AddNullToObject(o, key);
}

void tau_cli_team_warn(cJSON *doc, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(doc, "warnings"),
	                     cJSON_CreateString(msg));
}

int tau_cli_team_quantity_of(tau_quantity *q, const cJSON *v)
{
	int rc;

	if (cJSON_IsString(v)) {
		rc = tau_quantity_parse_str(q, v->valuestring);
	} else if (cJSON_IsNumber(v)) {
		char *raw = cJSON_PrintUnformatted(v);

		rc = raw != NULL ? tau_quantity_parse_json_value(q, raw, strlen(raw))
		                 : tau_error_set(TAU_ENOMEM, "out of memory");
		free(raw);
	} else {
		rc = tau_error_set(TAU_ETYPE, "neither a string nor a number");
	}
	return rc;
}

void tau_cli_team_put_quantity(cJSON *o, const char *key, const cJSON *v, cJSON *doc,
                               const char *where)
{
	char canon[TAU_QUANTITY_STR_MAX];
	tau_quantity q;
	int rc;

	if (v == NULL || cJSON_IsNull(v)) {
		cJSON_AddNullToObject(o, key);
		return;
	}
	rc = tau_cli_team_quantity_of(&q, v);
	if (rc == 0)
		rc = tau_quantity_format(canon, sizeof(canon), &q);
	if (rc != 0) {
		tau_cli_team_warn(doc, "%s: %s", where, tau_error_last()->msg);
		cJSON_AddNullToObject(o, key);
		return;
	}
	cJSON_AddStringToObject(o, key, canon);
}

const cJSON *tau_cli_team_items_of(const cJSON *list)
{
	const cJSON *items = cJSON_GetObjectItemCaseSensitive(list, "items");

	return cJSON_IsArray(items) ? items : NULL;
}

/* The team's Cohort: status.cohort as the aggregator wrote it, else tau-team-<team>. */
void tau_cli_team_cohort_name(char buf[TAU_CLI_TEAM_NAME_BUF], const cJSON *team, const char *name)
{
	const char *sc = tau_json_str(team, "status.cohort");

	snprintf(buf, TAU_CLI_TEAM_NAME_BUF, "%s%s", sc != NULL ? "" : TAU_CLI_TEAM_COHORT_PREFIX,
	         sc != NULL ? sc : name);
}

const cJSON *tau_cli_team_condition(const cJSON *obj, const char *type)
{
	const cJSON *c;

	cJSON_ArrayForEach(c, tau_json_find(obj, "status.conditions"))
	{
		if (tau_str_eq_both_set(tau_json_str(c, "type"), type))
			return c;
	}
	return NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* Verdicts                                                                                    */

const char *tau_cli_team_mode(const cJSON *team, const cJSON *cluster)
{
	return tau_str_eq_both_set(tau_json_str(cluster, "spec.queues.capacityTeamRef.name"),
	                           tau_json_str(team, "metadata.name"))
	               ? "capacity"
	               : "explicit";
}

bool tau_cli_team_ready(const cJSON *team)
{
	int64_t gen = 0, obs = -1;

	tau_json_get_int(&gen, team, "metadata.generation");
	if (team == NULL || tau_json_get_int(&obs, team, "status.observedGeneration") != 0)
		return false;
	return tau_str_eq_both_set(tau_json_str(team, "status.phase"), "Ready") && gen == obs;
}

static size_t count_workspaces(const cJSON *workspaces, const char *team)
{
	const cJSON *w;
	size_t n = 0;

	cJSON_ArrayForEach(w, tau_cli_team_items_of(workspaces))
	{
		n += tau_str_eq_both_set(tau_json_str(w, "spec.teamRef.name"), team);
	}
	return n;
}

/* ------------------------------------------------------------------------------------------ */
/* list                                                                                        */

cJSON *tau_cli_team_list_doc(const cJSON *teams, const cJSON *cluster, const cJSON *workspaces)
{
	const cJSON *items = tau_cli_team_items_of(teams), *t;
	cJSON *doc, *arr;

	if (items == NULL) {
		tau_error_set(TAU_EINVAL, "team list: no items");
		return NULL;
	}
	doc = cJSON_CreateObject();
	arr = cJSON_AddArrayToObject(doc, "items");
	if (arr == NULL) {
		cJSON_Delete(doc);
		tau_error_set(TAU_ENOMEM, "out of memory");
		return NULL;
	}
	cJSON_ArrayForEach(t, items)
	{
		const char *name = tau_json_str(t, "metadata.name");
		cJSON *o = cJSON_CreateObject();

		tau_cli_team_put(o, "name", name);
		tau_cli_team_put(o, "mode", tau_cli_team_mode(t, cluster));
		tau_cli_team_put(o, "phase", tau_json_str(t, "status.phase"));
		tau_cli_team_put(o, "cohort", tau_json_str(t, "status.cohort"));
		cJSON_AddNumberToObject(o, "workspaces",
		                        name != NULL ? (double)count_workspaces(workspaces, name)
		                                     : 0);
		tau_cli_team_put(
		        o, "reason",
		        tau_json_str(tau_cli_team_condition(t, TAU_CLI_TEAM_COND_QUOTA), "reason"));
		cJSON_AddBoolToObject(o, "ready", tau_cli_team_ready(t));
		cJSON_AddItemToArray(arr, o);
	}
	return doc;
}

/*
 * Print the objects of `arr` as a table, one column per key (a string, a number, or
 * "<none>"), under "heading:"; an empty array prints "label:" and "<none>" aligned with the
 * status block.
 */
int tau_cli_team_print_objects(FILE *out, const char *label, const char *heading, const cJSON *arr,
                               const char *const *headers, const char *const *keys, size_t n_cols)
{
	size_t n = (size_t)cJSON_GetArraySize(arr), r = 1;
	const char **cells;
	char(*nums)[24];
	const cJSON *it;

	if (n == 0) {
		fprintf(out, "%s:%*s%s\n", label, (int)(20 - strlen(label)), "", TAU_CLI_TEAM_NONE);
		return 0;
	}
	cells = calloc((n + 1) * n_cols, sizeof(*cells));
	nums = calloc((n + 1) * n_cols, sizeof(*nums));
	if (cells == NULL || nums == NULL) {
		free(cells);
		free(nums);
		return tau_error_set(TAU_ENOMEM, "out of memory");
	}
	for (size_t c = 0; c < n_cols; c++)
		cells[c] = headers[c];
	cJSON_ArrayForEach(it, arr)
	{
		for (size_t c = 0; c < n_cols; c++) {
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(it, keys[c]);
			size_t k = r * n_cols + c;

			int64_t num = 0;

			if (tau_json_get_int(&num, it, keys[c]) == 0) {
				snprintf(nums[k], sizeof(nums[k]), "%lld", (long long)num);
				cells[k] = nums[k];
			} else {
				cells[k] = cJSON_IsString(v) ? v->valuestring : NULL;
			}
		}
		r++;
	}
	if (heading != NULL)
		fprintf(out, "%s:\n", heading);
	tau_cli_print_table(out, cells, r, n_cols);
	free(cells);
	free(nums);
	return 0;
}

int tau_cli_team_print_list(FILE *out, const cJSON *doc, tau_cli_format fmt)
{
	static const char *const headers[] = {"NAME",   "MODE",       "PHASE",
	                                      "COHORT", "WORKSPACES", "REASON"};
	static const char *const keys[] = {"name",   "mode",       "phase",
	                                   "cohort", "workspaces", "reason"};
	const cJSON *items = tau_cli_team_items_of(doc);

	if (items == NULL)
		return tau_error_set(TAU_EINVAL, "team list: no items");
	if (fmt != TAU_CLI_TABLE)
		return tau_cli_doc_print(out, doc, fmt);
	if (cJSON_GetArraySize(items) == 0) {
		fprintf(out, "No teams found.\n");
		return 0;
	}
	return tau_cli_team_print_objects(out, "Teams", NULL, items, headers, keys, 6);
}
