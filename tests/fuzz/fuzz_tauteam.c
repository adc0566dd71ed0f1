/*
 * fuzz_tauteam.c - libFuzzer target for the readers of TauTeams.
 *
 * The first byte picks where the input goes in the fixed world
 * (kube_world.h): in place of the capacity team "research", in place of
 * the explicit-quota team "ml", or beside them; the rest goes through the
 * bounded JSON parser.  Its spec.quota goes to tau_budget_quota_parse
 * (cells must come out sorted, unique and non-negative), and the world to
 * tau_budget_decide (world_check).  A broken property aborts.
 */
#include "kube_world.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_cells(const tau_budget_cells *c)
{
	for (size_t i = 0; i < c->n; i++) {
		if (tau_quantity_sign(&c->items[i].q) < 0)
			world_fail("fuzz_tauteam", "a negative quota cell");
		if (i > 0) {
			int o = strcmp(c->items[i - 1].flavor, c->items[i].flavor);

			if (o == 0)
				o = strcmp(c->items[i - 1].resource, c->items[i].resource);
			if (o >= 0)
				world_fail("fuzz_tauteam", "quota cells out of order or twice");
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const world *w = world_get();
	cJSON *team = NULL;
	world_view v;
	tau_budget_cells nominal = {0}, borrowing = {0}, lending = {0};
	char err[512];
	unsigned slot;

	if (size == 0)
		return 0;
	slot = data[0] % 3;
	if (tau_json_parse(&team, (const char *)data + 1, size - 1, 1u << 20) < 0)
		return 0;
	if (tau_budget_quota_parse(&nominal, &borrowing, &lending,
	                           tau_json_find(team, "spec.quota"), "TauTeam \"fuzz\"", err,
	                           sizeof(err)) == 0) {
		check_cells(&nominal);
		check_cells(&borrowing);
		check_cells(&lending);
	}
	tau_budget_cells_clear(&nominal);
	tau_budget_cells_clear(&borrowing);
	tau_budget_cells_clear(&lending);
	world_view_of(&v, w);
	if (slot < 2)
		v.teams[slot] = team;
	else
		v.teams[v.in.api.n_teams++] = team;
	world_check("fuzz_tauteam", &v.in);
	cJSON_Delete(team);
	return 0;
}
