/*
 * inventory.h - rendering of `tau inventory` answers, apart from the I/O so
 * it can be unit tested.  Every function gives a new string (free()).
 *
 * The JSON of `pool` is a stable interface (docs/cli.md):
 *   {"established": bool, "missingNodes": [names],
 *    "flavors": [{"name": class, "nodes": count, "resources": {name: quantity}}]}
 */
#ifndef TAU_CLI_INVENTORY_H
#define TAU_CLI_INVENTORY_H

#include "cli.h"

#include "tau/inventory/v1/query.pb-c.h"

#include <stdbool.h>

/** @return 0 or -TAU_ENOMEM. */
int tau_cli_render_pool(char **out, const Tau__Inventory__V1__Pool *pool, tau_cli_format fmt);
int tau_cli_render_nodes(char **out, const Tau__Inventory__V1__ListNodesResponse *nodes,
                         tau_cli_format fmt);
int tau_cli_render_explain(char **out, const Tau__Inventory__V1__ExplainNodeResponse *ex,
                           tau_cli_format fmt);

#endif /* TAU_CLI_INVENTORY_H */
