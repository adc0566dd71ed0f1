/*
 * test_cli_team.c - `tau team` documents and tables from canned objects: the
 * mode and Ready verdicts, the list document and table, the budget beside the
 * pool (flavor matching, exact canonical quantities, invalid quantities), the
 * queues drawing from the Cohort, warnings, and usage errors (exit 2 before
 * any request).
 */
#include "team.h"

#include "tau/error.h"
#include "tau/json.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* Parse a JSON literal written with ' for " (so the literals stay readable). */
static cJSON *parse(const char *s)
{
	char *t = strdup(s);
	cJSON *o = NULL;

	assert_non_null(t);
	for (char *p = t; *p != '\0'; p++)
		if (*p == '\'')
			*p = '"';
	assert_int_equal(tau_json_parse(&o, t, strlen(t), 0), 0);
	free(t);
	return o;
}

/* Assert that `doc` equals the JSON literal `want` (written with '). */
static void assert_json(const cJSON *doc, const char *want)
{
	cJSON *w = parse(want);

	if (!cJSON_Compare(doc, w, true)) {
		char *got = cJSON_PrintUnformatted(doc), *exp = cJSON_PrintUnformatted(w);

		fprintf(stderr, "got:  %s\nwant: %s\n", got, exp);
		free(got);
		free(exp);
		cJSON_Delete(w);
		fail();
	}
	cJSON_Delete(w);
}

static char *render(int (*fn)(FILE *, const cJSON *, tau_cli_format), const cJSON *doc,
                    tau_cli_format fmt)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(fn(f, doc, fmt), 0);
	fclose(f);
	return buf;
}

#define CLUSTER                                                                                    \
	"{'metadata':{'name':'cluster'},'spec':{'queues':{'capacityTeamRef':{'name':'research'}}}" \
	","                                                                                        \
	"'status':{'discoveredCapacity':["                                                         \
	"{'flavor':'h100','resource':'nvidia.com/gpu','capacity':16},"                             \
	"{'flavor':'h100','resource':'memory','capacity':'1.5Gi'},"                                \
	"{'flavor':'taugrid-gpu-a100','resource':'nvidia.com/gpu','capacity':'4'},"                \
	"{'flavor':'l4','resource':'nvidia.com/gpu','capacity':'2'}]}}"

#define COND_READY                                                                                 \
	"{'type':'QuotaReady','status':'True','reason':'BudgetApplied','message':'ok',"            \
	"'lastTransitionTime':'2026-12-02T18:00:00Z'}"

#define RESEARCH                                                                                   \
	"{'metadata':{'name':'research','namespace':'tau-system','generation':2},"                 \
	"'spec':{},'status':{'phase':'Ready','observedGeneration':2,'cohort':'tau-team-research'," \
	"'cohortUID':'uid-1','conditions':[" COND_READY "]}}"

#define VISION                                                                                     \
	"{'metadata':{'name':'vision','namespace':'tau-system','generation':1},"                   \
	"'spec':{'quota':[{'flavor':'a100','resource':'nvidia.com/gpu','nominalQuota':8},"         \
	"{'flavor':'a100','resource':'cpu','nominalQuota':'96000m'}]},"                            \
	"'status':{'phase':'Pending','observedGeneration':1,'conditions':[{'type':'QuotaReady',"   \
	"'status':'False','reason':'ExplicitQuotaUnsupported','message':'not yet'}]}}"

#define COHORT                                                                                     \
	"{'metadata':{'name':'tau-team-research','uid':'uid-1'},'spec':{'resourceGroups':[{"       \
	"'coveredResources':['memory','nvidia.com/gpu'],'flavors':["                               \
	"{'name':'taugrid-gpu-a100','resources':[{'name':'memory','nominalQuota':'0'},"            \
	"{'name':'nvidia.com/gpu','nominalQuota':'4'}]},"                                          \
	"{'name':'taugrid-gpu-h100','resources':[{'name':'memory','nominalQuota':'1536Mi'},"       \
	"{'name':'nvidia.com/gpu','nominalQuota':'16000m'}]}]}]}}"

#define WORKSPACES                                                                                 \
	"{'items':[{'metadata':{'name':'alpha'},'spec':{'teamRef':{'name':'research'}}},"          \
	"{'metadata':{'name':'beta'},'spec':{'teamRef':{'name':'research'}}},"                     \
	"{'metadata':{'name':'delta'},'spec':{'teamRef':{'name':'research'}}},"                    \
	"{'metadata':{'name':'gamma'},'spec':{}},"                                                 \
	"{'metadata':{'name':'omega'},'spec':{'teamRef':{'name':'vision'}}}]}"

/*
 * alpha: labelled, a different name; beta: found by its name only; delta: none; an
 * external queue in the Cohort; one of another team (left out).
 */
#define QUEUES                                                                                     \
	"{'items':["                                                                               \
	"{'metadata':{'name':'other-team-q','labels':{'tau.azure.com/team':'vision',"              \
	"'tau.azure.com/workspace':'omega'}},'spec':{'cohortName':'tau-team-vision'}},"            \
	"{'metadata':{'name':'alpha-q','labels':{'tau.azure.com/team':'research',"                 \
	"'tau.azure.com/workspace':'alpha'}},'spec':{'cohortName':'tau-team-research'},"           \
	"'status':{'admittedWorkloads':1,'reservingWorkloads':1,'pendingWorkloads':3,"             \
	"'flavorsReservation':[{'name':'taugrid-gpu-h100','resources':["                           \
	"{'name':'nvidia.com/gpu','total':'8','borrowed':8},"                                      \
	"{'name':'memory','total':'1073741824','borrowed':'bogus'}]}]}},"                          \
	"{'metadata':{'name':'tau-ws-beta'},'spec':{'cohortName':'tau-team-research'},"            \
	"'status':{'admittedWorkloads':0,'pendingWorkloads':0}},"                                  \
	"{'metadata':{'name':'external'},'spec':{'cohortName':'tau-team-research'}}]}"

static void test_mode_and_ready(void **state)
{
	(void)state;
	cJSON *cluster = parse(CLUSTER), *research = parse(RESEARCH), *vision = parse(VISION),
	      *stale = parse("{'metadata':{'name':'research','generation':3},"
	                     "'status':{'phase':'Ready','observedGeneration':2}}"),
	      *degraded = parse("{'metadata':{'name':'research','generation':1},"
	                        "'status':{'phase':'Degraded','observedGeneration':1}}"),
	      *bare = parse("{'metadata':{'name':'x'}}");

	assert_string_equal(tau_cli_team_mode(research, cluster), "capacity");
	assert_string_equal(tau_cli_team_mode(vision, cluster), "explicit");
	assert_string_equal(tau_cli_team_mode(research, NULL), "explicit");
	assert_true(tau_cli_team_ready(research));
	assert_false(tau_cli_team_ready(stale));
	assert_false(tau_cli_team_ready(degraded));
	assert_false(tau_cli_team_ready(bare));
	assert_false(tau_cli_team_ready(NULL));
	cJSON_Delete(cluster);
	cJSON_Delete(research);
	cJSON_Delete(vision);
	cJSON_Delete(stale);
	cJSON_Delete(degraded);
	cJSON_Delete(bare);
}

static void test_list_doc_and_table(void **state)
{
	(void)state;
	cJSON *cluster = parse(CLUSTER), *wss = parse(WORKSPACES),
	      *teams = parse("{'items':[" RESEARCH "," VISION ",{'metadata':{'name':'new'}}]}"),
	      *doc = tau_cli_team_list_doc(teams, cluster, wss);
	char *out;

	assert_non_null(doc);
	assert_json(doc, "{'items':["
	                 "{'name':'research','mode':'capacity','phase':'Ready',"
	                 "'cohort':'tau-team-research','workspaces':3,'reason':'BudgetApplied',"
	                 "'ready':true},"
	                 "{'name':'vision','mode':'explicit','phase':'Pending','cohort':null,"
	                 "'workspaces':1,'reason':'ExplicitQuotaUnsupported','ready':false},"
	                 "{'name':'new','mode':'explicit','phase':null,'cohort':null,"
	                 "'workspaces':0,'reason':null,'ready':false}]}");
	out = render(tau_cli_team_print_list, doc, TAU_CLI_TABLE);
	assert_string_equal(
	        out,
	        "NAME       MODE       PHASE     COHORT              WORKSPACES   REASON\n"
	        "research   capacity   Ready     tau-team-research   3            BudgetApplied\n"
	        "vision     explicit   Pending   <none>              1            "
	        "ExplicitQuotaUnsupported\n"
	        "new        explicit   <none>    <none>              0            <none>\n");
	free(out);
	out = render(tau_cli_team_print_list, doc, TAU_CLI_JSON);
	{
		cJSON *back = NULL;

		assert_int_equal(tau_json_parse(&back, out, strlen(out), 0), 0);
		assert_true(cJSON_Compare(back, doc, true));
		cJSON_Delete(back);
	}
	free(out);
	cJSON_Delete(doc);
	cJSON_Delete(teams);
	cJSON_Delete(wss);
	cJSON_Delete(cluster);
}

static void test_list_empty_and_bad(void **state)
{
	(void)state;
	cJSON *empty = parse("{'items':[]}"), *bad = parse("{'kind':'TauTeamList'}"),
	      *doc = tau_cli_team_list_doc(empty, NULL, NULL);
	char *out;

	assert_non_null(doc);
	out = render(tau_cli_team_print_list, doc, TAU_CLI_TABLE);
	assert_string_equal(out, "No teams found.\n");
	free(out);
	assert_null(tau_cli_team_list_doc(bad, NULL, NULL));
	assert_int_equal(tau_error_last()->code, TAU_EINVAL);
	cJSON_Delete(doc);
	cJSON_Delete(empty);
	cJSON_Delete(bad);
}

static void test_status_capacity_team(void **state)
{
	(void)state;
	cJSON *team = parse(RESEARCH), *cluster = parse(CLUSTER), *cohort = parse(COHORT),
	      *queues = parse(QUEUES), *wss = parse(WORKSPACES), *doc, *warnings;
	tau_cli_team_input in = {team, cluster, cohort, queues, wss, NULL, NULL, NULL};

	doc = tau_cli_team_status_doc(&in);
	assert_non_null(doc);
	warnings = cJSON_DetachItemFromObject(doc, "warnings");
	assert_int_equal(cJSON_GetArraySize(warnings), 1);
	assert_string_equal(
	        cJSON_GetArrayItem(warnings, 0)->valuestring,
	        "ClusterQueue alpha-q flavor taugrid-gpu-h100 resource memory borrowed: "
	        "quantity \"bogus\": quantities must match the regular expression "
	        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
	cJSON_Delete(warnings);
	/*
	 * Pool flavors: "h100" is the class of taugrid-gpu-h100, "taugrid-gpu-a100" matches by
	 * name, "l4" has no Cohort flavor (its own row).  16 (a number) and "16000m" are "16";
	 * "1.5Gi" is "1536Mi"; "1073741824" stays decimal; "bogus" is null and a warning.
	 */
	assert_json(
	        doc,
	        "{'name':'research','systemNamespace':'tau-system','mode':'capacity',"
	        "'phase':'Ready','ready':true,'generation':2,'observedGeneration':2,"
	        "'reason':'BudgetApplied',"
	        "'cohort':{'name':'tau-team-research','uid':'uid-1','found':true},"
	        "'poolSource':'discoveredCapacity',"
	        "'dra':{'checked':false,'aggregator':null,'reason':'no aggregator named (give "
	        "--aggregator ADDR or set TAU_AGGREGATOR)'},'budget':["
	        "{'flavor':'l4','resource':'nvidia.com/gpu','budget':null,'pool':'2'},"
	        "{'flavor':'taugrid-gpu-a100','resource':'memory','budget':'0','pool':null},"
	        "{'flavor':'taugrid-gpu-a100','resource':'nvidia.com/gpu','budget':'4','pool':'4'},"
	        "{'flavor':'taugrid-gpu-h100','resource':'memory','budget':'1536Mi',"
	        "'pool':'1536Mi'},"
	        "{'flavor':'taugrid-gpu-h100','resource':'nvidia.com/gpu','budget':'16',"
	        "'pool':'16'}],"
	        "'queues':["
	        "{'workspace':'alpha','clusterQueue':'alpha-q','found':true,"
	        "'cohort':'tau-team-research','admittedWorkloads':1,'reservingWorkloads':1,"
	        "'pendingWorkloads':3,'reservations':["
	        "{'flavor':'taugrid-gpu-h100','resource':'nvidia.com/gpu','total':'8',"
	        "'borrowed':'8'},"
	        "{'flavor':'taugrid-gpu-h100','resource':'memory','total':'1073741824',"
	        "'borrowed':null}]},"
	        "{'workspace':'beta','clusterQueue':'tau-ws-beta','found':true,"
	        "'cohort':'tau-team-research','admittedWorkloads':0,'reservingWorkloads':null,"
	        "'pendingWorkloads':0,'reservations':[]},"
	        "{'workspace':'delta','clusterQueue':'tau-ws-delta','found':false,'cohort':null,"
	        "'admittedWorkloads':null,'reservingWorkloads':null,'pendingWorkloads':null,"
	        "'reservations':[]},"
	        "{'workspace':null,'clusterQueue':'external','found':true,"
	        "'cohort':'tau-team-research','admittedWorkloads':null,'reservingWorkloads':null,"
	        "'pendingWorkloads':null,'reservations':[]}],"
	        "'conditions':[" COND_READY "]}");
	cJSON_Delete(doc);
	cJSON_Delete(team);
	cJSON_Delete(cluster);
	cJSON_Delete(cohort);
	cJSON_Delete(queues);
	cJSON_Delete(wss);
}

/*
 * With the aggregator's pool: VIA-DRA beside the pool, matched by class (h100 is
 * taugrid-gpu-h100's class, a100 matches taugrid-gpu-a100); "0" where the class has none of
 * it, null for l4, which the aggregator's pool does not name.  An aggregator that does not
 * answer: not checked, said why, no column.
 */
static void test_status_capacity_team_via_dra(void **state)
{
	(void)state;
	cJSON *team = parse(RESEARCH), *cluster = parse(CLUSTER), *cohort = parse(COHORT),
	      *wss = parse(WORKSPACES), *dra, *doc;
	Tau__Inventory__V1__Pool pool = TAU__INVENTORY__V1__POOL__INIT;
	Tau__Inventory__V1__Flavor h100 = TAU__INVENTORY__V1__FLAVOR__INIT,
	                           a100 = TAU__INVENTORY__V1__FLAVOR__INIT, *fp[2] = {&a100, &h100};
	Tau__Inventory__V1__Flavor__DraResourcesEntry e =
	        TAU__INVENTORY__V1__FLAVOR__DRA_RESOURCES_ENTRY__INIT;
	Tau__Inventory__V1__Flavor__DraResourcesEntry *ep[1] = {&e};
	tau_cli_team_input in = {team, cluster, cohort, NULL, wss, NULL, "agg:50051", NULL};
	char *out;

	e.key = (char *)"nvidia.com/gpu";
	e.value = (char *)"8";
	h100.name = (char *)"h100";
	h100.n_dra_resources = 1;
	h100.dra_resources = ep;
	a100.name = (char *)"a100";
	pool.n_flavors = 2;
	pool.flavors = fp;
	dra = tau_cli_team_pool_dra(&pool);
	assert_json(dra, "{'a100':{},'h100':{'nvidia.com/gpu':'8'}}");
	in.dra = dra;
	doc = tau_cli_team_status_doc(&in);
	assert_non_null(doc);
	assert_json(cJSON_GetObjectItemCaseSensitive(doc, "dra"),
	            "{'checked':true,'aggregator':'agg:50051','reason':null}");
	assert_json(cJSON_GetObjectItemCaseSensitive(doc, "budget"),
	            "[{'flavor':'l4','resource':'nvidia.com/gpu','budget':null,'pool':'2',"
	            "'viaDra':null},"
	            "{'flavor':'taugrid-gpu-a100','resource':'memory','budget':'0','pool':null,"
	            "'viaDra':'0'},"
	            "{'flavor':'taugrid-gpu-a100','resource':'nvidia.com/gpu','budget':'4',"
	            "'pool':'4','viaDra':'0'},"
	            "{'flavor':'taugrid-gpu-h100','resource':'memory','budget':'1536Mi',"
	            "'pool':'1536Mi','viaDra':'0'},"
	            "{'flavor':'taugrid-gpu-h100','resource':'nvidia.com/gpu','budget':'16',"
	            "'pool':'16','viaDra':'8'}]");
	out = render(tau_cli_team_print_status, doc, TAU_CLI_TABLE);
	assert_non_null(strstr(out, "VIA-DRA: the part of it DRA devices give"));
	assert_non_null(strstr(out,
	                       "FLAVOR             RESOURCE         BUDGET   POOL     VIA-DRA\n"
	                       "l4                 nvidia.com/gpu   <none>   2        <none>\n"));
	assert_non_null(strstr(out, "taugrid-gpu-h100   nvidia.com/gpu   16       16       8\n"));
	free(out);
	cJSON_Delete(doc);

	/* the aggregator did not answer: not checked, the reason, a warning, no column */
	in.dra = NULL;
	in.dra_error = "UNAVAILABLE: connection refused";
	doc = tau_cli_team_status_doc(&in);
	assert_non_null(doc);
	assert_json(cJSON_GetObjectItemCaseSensitive(doc, "dra"),
	            "{'checked':false,'aggregator':'agg:50051','reason':'UNAVAILABLE: connection "
	            "refused'}");
	assert_null(cJSON_GetObjectItemCaseSensitive(
	        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "budget"), 0), "viaDra"));
	out = render(tau_cli_team_print_status, doc, TAU_CLI_TABLE);
	assert_null(strstr(out, "VIA-DRA"));
	assert_non_null(strstr(out, "Warning: aggregator agg:50051: GetPool failed: UNAVAILABLE: "
	                            "connection refused; the part of the pool that comes through "
	                            "DRA is unknown\n"));
	free(out);
	cJSON_Delete(doc);
	cJSON_Delete(dra);
	cJSON_Delete(team);
	cJSON_Delete(cluster);
	cJSON_Delete(cohort);
	cJSON_Delete(wss);
}

static void test_status_explicit_team_table(void **state)
{
	(void)state;
	cJSON *team = parse(VISION), *cluster = parse(CLUSTER), *wss = parse(WORKSPACES), *doc;
	tau_cli_team_input in = {team, cluster, NULL, NULL, wss, NULL, NULL, NULL};
	char *out;

	doc = tau_cli_team_status_doc(&in);
	assert_non_null(doc);
	out = render(tau_cli_team_print_status, doc, TAU_CLI_TABLE);
	assert_string_equal(
	        out,
	        "Name:                vision\n"
	        "System namespace:    tau-system\n"
	        "Mode:                explicit\n"
	        "Phase:               Pending\n"
	        "Generation:          1 (observed 1)\n"
	        "Cohort:              tau-team-vision (not found)\n"
	        "Budget (QUOTA: spec.quota; GUARANTEES: workspace spec.quota; BUDGET: Cohort "
	        "nominalQuota; APPLIED: Cohort and workspace queues; RESERVED: their "
	        "reservations):\n"
	        "FLAVOR   RESOURCE         QUOTA   GUARANTEES   BUDGET   APPLIED   RESERVED\n"
	        "a100     cpu              96      0            <none>   0         0\n"
	        "a100     nvidia.com/gpu   8       0            <none>   0         0\n"
	        "Queues (ClusterQueue reservations and borrowing):\n"
	        "WORKSPACE   CLUSTERQUEUE   ADMITTED   PENDING   FLAVOR   RESOURCE   RESERVED   "
	        "BORROWED\n"
	        "omega       <not found>    <none>     <none>    <none>   <none>     <none>     "
	        "<none>\n"
	        "Conditions:\n"
	        "TYPE         STATUS   REASON                     MESSAGE\n"
	        "QuotaReady   False    ExplicitQuotaUnsupported   not yet\n"
	        "Warning: Cohort tau-team-vision does not exist\n");
	free(out);
	cJSON_Delete(doc);
	cJSON_Delete(team);
	cJSON_Delete(cluster);
	cJSON_Delete(wss);
}

/*
 * An explicit team's sums per flavor and resource: guarantees of its workspaces only (another
 * team's are left out; an unparsable one is null and a warning), applied = the Cohort plus the
 * TauGrid ClusterQueues in it (not an external queue, not one in another Cohort), reserved =
 * those queues' reservations.
 */
#define ML                                                                                         \
	"{'metadata':{'name':'ml','namespace':'tau-system','generation':3},"                       \
	"'spec':{'quota':[{'flavor':'taugrid-gpu-h100','resource':'nvidia.com/gpu',"               \
	"'nominalQuota':10},{'flavor':'taugrid-gpu-h100','resource':'cpu','nominalQuota':'64'}]}," \
	"'status':{'phase':'Ready','observedGeneration':3,'cohort':'tau-team-ml',"                 \
	"'cohortUID':'co-ml','conditions':[{'type':'QuotaReady','status':'True',"                  \
	"'reason':'QuotaApplied','message':'ok'}]}}"
#define ML_COHORT                                                                                  \
	"{'kind':'Cohort','metadata':{'name':'tau-team-ml','uid':'co-ml'},'spec':{"                \
	"'resourceGroups':[{'coveredResources':['cpu','nvidia.com/gpu'],'flavors':["               \
	"{'name':'taugrid-gpu-h100','resources':[{'name':'cpu','nominalQuota':'56'},"              \
	"{'name':'nvidia.com/gpu','nominalQuota':'4'}]}]}]}}"
#define ML_WORKSPACES                                                                              \
	"{'items':["                                                                               \
	"{'metadata':{'name':'a'},'spec':{'teamRef':{'name':'ml'},'quota':["                       \
	"{'flavor':'taugrid-gpu-h100','resource':'nvidia.com/gpu','nominalQuota':'4',"             \
	"'borrowingLimit':'2'}]}},"                                                                \
	"{'metadata':{'name':'b'},'spec':{'teamRef':{'name':'ml'},'quota':["                       \
	"{'flavor':'taugrid-gpu-h100','resource':'nvidia.com/gpu','nominalQuota':2},"              \
	"{'flavor':'taugrid-gpu-h100','resource':'cpu','nominalQuota':'8000m'}]}},"                \
	"{'metadata':{'name':'c'},'spec':{'teamRef':{'name':'cv'},'quota':["                       \
	"{'flavor':'taugrid-gpu-h100','resource':'nvidia.com/gpu','nominalQuota':'7'}]}},"         \
	"{'metadata':{'name':'d'},'spec':{'teamRef':{'name':'ml'},'quota':["                       \
	"{'flavor':'taugrid-gpu-h100','resource':'memory','nominalQuota':'lots'}]}}]}"
#define ML_CQ(name, ws, cohort, gpu, cpu, resv)                                                    \
	"{'kind':'ClusterQueue','metadata':{'name':'" name "','labels':{"                          \
	"'app.kubernetes.io/managed-by':'taugrid','tau.azure.com/team':'ml',"                      \
	"'tau.azure.com/workspace':'" ws "'}},'spec':{'cohortName':'" cohort "',"                  \
	"'resourceGroups':[{'coveredResources':['cpu','nvidia.com/gpu'],'flavors':["               \
	"{'name':'taugrid-gpu-h100','resources':[{'name':'cpu','nominalQuota':'" cpu "'},"         \
	"{'name':'nvidia.com/gpu','nominalQuota':'" gpu "'}]}]}]},"                                \
	"'status':{'flavorsReservation':[{'name':'taugrid-gpu-h100','resources':[" resv "]}]}}"
#define ML_QUEUES                                                                                                                       \
	"{'items':[" ML_CQ("tau-ws-a", "a", "tau-team-ml", "4", "0", "{'name':'nvidia.com/gpu','total':'5','borrowed':'1'}") "," ML_CQ( \
	        "tau-ws-b", "b", "tau-team-ml", "2", "8",                                                                               \
	        "{'name':'cpu','total':'500m','borrowed':'0'}") "," ML_CQ("tau-ws-x", "x",                                              \
	                                                                  "tau-team-"                                                   \
	                                                                  "other",                                                      \
	                                                                  "3", "0",                                                     \
	                                                                  "{'name':'"                                                   \
	                                                                  "nvidia.com/"                                                 \
	                                                                  "gpu','total'"                                                \
	                                                                  ":'3','"                                                      \
	                                                                  "borrowed':'"                                                 \
	                                                                  "0'}") ","                                                    \
	                                                                         "{'"                                                   \
	                                                                         "kind'"                                                \
	                                                                         ":'"                                                   \
	                                                                         "Clust"                                                \
	                                                                         "erQue"                                                \
	                                                                         "ue','"                                                \
	                                                                         "metad"                                                \
	                                                                         "ata':"                                                \
	                                                                         "{'"                                                   \
	                                                                         "name'"                                                \
	                                                                         ":'"                                                   \
	                                                                         "exter"                                                \
	                                                                         "nal'}"                                                \
	                                                                         ",'"                                                   \
	                                                                         "spec'"                                                \
	                                                                         ":{'"                                                  \
	                                                                         "cohor"                                                \
	                                                                         "tName"                                                \
	                                                                         "':"                                                   \
	                                                                         "'tau-"                                                \
	                                                                         "team-"                                                \
	                                                                         "ml','"                                                \
	                                                                         "resou"                                                \
	                                                                         "rceGr"                                                \
	                                                                         "oups'"                                                \
	                                                                         ":[{'"                                                 \
	                                                                         "flavo"                                                \
	                                                                         "rs':["                                                \
	                                                                         "{'"                                                   \
	                                                                         "name'"                                                \
	                                                                         ":'"                                                   \
	                                                                         "taugr"                                                \
	                                                                         "id-"                                                  \
	                                                                         "gpu-"                                                 \
	                                                                         "h100'"                                                \
	                                                                         ",'"                                                   \
	                                                                         "resou"                                                \
	                                                                         "rces'"                                                \
	                                                                         ":["                                                   \
	                                                                         "{'"                                                   \
	                                                                         "name'"                                                \
	                                                                         ":'"                                                   \
	                                                                         "nvidi"                                                \
	                                                                         "a."                                                   \
	                                                                         "com/"                                                 \
	                                                                         "gpu',"                                                \
	                                                                         "'nomi"                                                \
	                                                                         "nalQu"                                                \
	                                                                         "ota':"                                                \
	                                                                         "'100'"                                                \
	                                                                         "}]}]}"                                                \
	                                                                         "]}}]}"

static void test_status_explicit_team_sums(void **state)
{
	(void)state;
	cJSON *team = parse(ML), *cohort = parse(ML_COHORT), *queues = parse(ML_QUEUES),
	      *wss = parse(ML_WORKSPACES), *doc, *warnings, *back = NULL;
	tau_cli_team_input in = {team, NULL, cohort, queues, wss, NULL, NULL, NULL};
	char *out;

	doc = tau_cli_team_status_doc(&in);
	assert_non_null(doc);
	assert_json(cJSON_GetObjectItemCaseSensitive(doc, "budget"),
	            "[{'flavor':'taugrid-gpu-h100','resource':'cpu','budget':'56','pool':'64',"
	            "'guarantees':'8','applied':'64','reserved':'500m'},"
	            "{'flavor':'taugrid-gpu-h100','resource':'memory','budget':null,'pool':null,"
	            "'guarantees':null,'applied':'0','reserved':'0'},"
	            "{'flavor':'taugrid-gpu-h100','resource':'nvidia.com/gpu','budget':'4',"
	            "'pool':'10','guarantees':'6','applied':'10','reserved':'5'}]");
	warnings = cJSON_GetObjectItemCaseSensitive(doc, "warnings");
	assert_int_equal(cJSON_GetArraySize(warnings), 1);
	assert_non_null(strstr(cJSON_GetArrayItem(warnings, 0)->valuestring,
	                       "TauWorkspace d spec.quota flavor taugrid-gpu-h100 resource memory "
	                       "nominalQuota: quantity \"lots\""));
	out = render(tau_cli_team_print_status, doc, TAU_CLI_TABLE);
	assert_non_null(strstr(
	        out, "Budget (QUOTA: spec.quota; GUARANTEES: workspace spec.quota; BUDGET: Cohort "
	             "nominalQuota; APPLIED: Cohort and workspace queues; RESERVED: their "
	             "reservations):\n"
	             "FLAVOR             RESOURCE         QUOTA    GUARANTEES   BUDGET   APPLIED   "
	             "RESERVED\n"
	             "taugrid-gpu-h100   cpu              64       8            56       64        "
	             "500m\n"
	             "taugrid-gpu-h100   memory           <none>   <none>       <none>   0         "
	             "0\n"
	             "taugrid-gpu-h100   nvidia.com/gpu   10       6            4        10        "
	             "5\n"
	             "Queues"));
	free(out);
	out = render(tau_cli_team_print_status, doc, TAU_CLI_JSON);
	assert_int_equal(tau_json_parse(&back, out, strlen(out), 0), 0);
	assert_true(cJSON_Compare(back, doc, true));
	free(out);
	cJSON_Delete(back);
	cJSON_Delete(doc);
	cJSON_Delete(team);
	cJSON_Delete(cohort);
	cJSON_Delete(queues);
	cJSON_Delete(wss);
}

static void test_status_table_with_reservations(void **state)
{
	(void)state;
	cJSON *team = parse(RESEARCH), *cluster = parse(CLUSTER), *cohort = parse(COHORT),
	      *queues = parse("{'items':[{'metadata':{'name':'tau-ws-alpha','labels':{"
	                      "'tau.azure.com/team':'research','tau.azure.com/workspace':'alpha'}},"
	                      "'status':{'admittedWorkloads':2,'pendingWorkloads':1,"
	                      "'flavorsReservation':[{'name':'taugrid-gpu-h100','resources':["
	                      "{'name':'nvidia.com/gpu','total':'8','borrowed':'8'},"
	                      "{'name':'memory','total':'0','borrowed':'0'}]}]}}]}"),
	      *wss = parse("{'items':[{'metadata':{'name':'alpha'},"
	                   "'spec':{'teamRef':{'name':'research'}}}]}"),
	      *doc;
	tau_cli_team_input in = {team, cluster, cohort, queues, wss, NULL, NULL, NULL};
	char *out;

	doc = tau_cli_team_status_doc(&in);
	assert_non_null(doc);
	out = render(tau_cli_team_print_status, doc, TAU_CLI_TABLE);
	assert_non_null(strstr(out, "WORKSPACE   CLUSTERQUEUE   ADMITTED   PENDING   FLAVOR       "
	                            "      RESOURCE         RESERVED   BORROWED\n"
	                            "alpha       tau-ws-alpha   2          1         "
	                            "taugrid-gpu-h100   nvidia.com/gpu   8          8\n"
	                            "alpha       tau-ws-alpha   2          1         "
	                            "taugrid-gpu-h100   memory           0          0\n"));
	assert_non_null(strstr(out, "Cohort:              tau-team-research\n"));
	assert_null(strstr(out, "Warning"));
	free(out);
	cJSON_Delete(doc);
	cJSON_Delete(team);
	cJSON_Delete(cluster);
	cJSON_Delete(cohort);
	cJSON_Delete(queues);
	cJSON_Delete(wss);
}

static void test_status_warnings_and_json_form(void **state)
{
	(void)state;
	/* No status.cohort: the Cohort is tau-team-<team>; a recreated Cohort is named. */
	cJSON *team = parse("{'metadata':{'name':'research','generation':1},"
	                    "'status':{'phase':'Degraded','cohortUID':'old-uid'}}"),
	      *cohort = parse("{'metadata':{'name':'tau-team-research','uid':'new-uid'},"
	                      "'spec':{'resourceGroups':[{'flavors':[{'name':'f','resources':["
	                      "{'name':'cpu','nominalQuota':'1e3'}]}]}]}}"),
	      *doc, *back = NULL, *noname = parse("{'metadata':{}}");
	tau_cli_team_input in = {team, NULL, cohort, NULL, NULL, NULL, NULL, NULL};
	tau_cli_team_input bad = {noname, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
	char *out;

	doc = tau_cli_team_status_doc(&in);
	assert_non_null(doc);
	assert_json(cJSON_GetObjectItemCaseSensitive(doc, "cohort"),
	            "{'name':'tau-team-research','uid':'old-uid','found':true}");
	assert_json(cJSON_GetObjectItemCaseSensitive(doc, "budget"),
	            "[{'flavor':'f','resource':'cpu','budget':'1e3','pool':null,'guarantees':'0',"
	            "'applied':'1e3','reserved':'0'}]");
	assert_json(cJSON_GetObjectItemCaseSensitive(doc, "warnings"),
	            "['Cohort tau-team-research has UID new-uid, not status.cohortUID old-uid "
	            "(recreated since?)']");
	assert_json(cJSON_GetObjectItemCaseSensitive(doc, "observedGeneration"), "null");
	assert_false(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "ready")));
	out = render(tau_cli_team_print_status, doc, TAU_CLI_TABLE);
	assert_non_null(strstr(out, "Generation:          1 (not observed yet)\n"));
	assert_non_null(strstr(out, "Queues:              <none>\nConditions:          <none>\n"
	                            "Warning: Cohort tau-team-research has UID new-uid"));
	free(out);
	out = render(tau_cli_team_print_status, doc, TAU_CLI_JSON);
	assert_int_equal(tau_json_parse(&back, out, strlen(out), 0), 0);
	assert_true(cJSON_Compare(back, doc, true));
	free(out);
	assert_null(tau_cli_team_status_doc(&bad));
	assert_int_equal(tau_error_last()->code, TAU_EINVAL);
	cJSON_Delete(back);
	cJSON_Delete(doc);
	cJSON_Delete(team);
	cJSON_Delete(cohort);
	cJSON_Delete(noname);
}

static void test_usage_errors_exit_2(void **state)
{
	(void)state;
	char a0[] = "team", list[] = "list", status[] = "status", bad[] = "Bad_Name", longname[80],
	     o[] = "-o", xml[] = "xml", extra[] = "x", verb[] = "frob", kc[] = "--kubeconfig",
	     nokc[] = "/nonexistent/kubeconfig", ok[] = "research";
	char *none[] = {a0, NULL};
	char *no_name[] = {a0, status, NULL};
	char *bad_name[] = {a0, status, bad, NULL};
	char *long_name[] = {a0, status, longname, NULL};
	char *bad_o[] = {a0, list, o, xml, NULL};
	char *extra_arg[] = {a0, list, extra, NULL};
	char *bad_verb[] = {a0, verb, NULL};
	char *no_config[] = {a0, status, ok, kc, nokc, NULL};
	char agg[] = "--aggregator", addr[] = "localhost:50051", empty[] = "", ca[] = "--ca-file",
	     caf[] = "/tmp/ca.pem", insecure[] = "--insecure";
	char *list_agg[] = {a0, list, agg, addr, NULL};
	char *empty_agg[] = {a0, status, ok, agg, empty, NULL};
	char *ca_and_insecure[] = {a0, status, ok, agg, addr, ca, caf, insecure, NULL};

	memset(longname, 'a', 64);
	longname[64] = '\0';
	assert_int_equal(tau_cli_team(1, none, NULL), TAU_CLI_USAGE);
	assert_int_equal(tau_cli_team(2, no_name, NULL), TAU_CLI_USAGE);
	assert_int_equal(tau_cli_team(3, bad_name, NULL), TAU_CLI_USAGE);
	assert_int_equal(tau_cli_team(3, long_name, NULL), TAU_CLI_USAGE);
	assert_int_equal(tau_cli_team(4, bad_o, NULL), TAU_CLI_USAGE);
	assert_int_equal(tau_cli_team(3, extra_arg, NULL), TAU_CLI_USAGE);
	assert_int_equal(tau_cli_team(2, bad_verb, NULL), TAU_CLI_USAGE);
	assert_int_equal(tau_cli_team(5, no_config, NULL), TAU_CLI_USAGE);
	/* the aggregator's options are status's, whole and not contradicting */
	assert_int_equal(tau_cli_team(4, list_agg, NULL), TAU_CLI_USAGE);
	assert_int_equal(tau_cli_team(5, empty_agg, NULL), TAU_CLI_USAGE);
	assert_int_equal(tau_cli_team(8, ca_and_insecure, NULL), TAU_CLI_USAGE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_mode_and_ready),
	        cmocka_unit_test(test_list_doc_and_table),
	        cmocka_unit_test(test_list_empty_and_bad),
	        cmocka_unit_test(test_status_capacity_team),
	        cmocka_unit_test(test_status_capacity_team_via_dra),
	        cmocka_unit_test(test_status_explicit_team_table),
	        cmocka_unit_test(test_status_explicit_team_sums),
	        cmocka_unit_test(test_status_table_with_reservations),
	        cmocka_unit_test(test_status_warnings_and_json_form),
	        cmocka_unit_test(test_usage_errors_exit_2),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
