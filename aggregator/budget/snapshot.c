/*
 * snapshot.c - the pool snapshot the budget plans from (plan.h): per GPU class, the exact sum
 * of each resource, copied from the inventory's pool under its lock, sorted by class and
 * resource so two copies of the same pool are equal whatever the order of events was.
 */
#include "plan.h"

#include "helpers.h"

#include "tau/error.h"
#include "tau/json.h"
#include "tau/mem.h"
#include "tau/names.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tau_budget_pool_new(tau_budget_pool **out)
{
	tau_budget_pool *p = calloc(1, sizeof(*p));

	if (p == NULL)
		return tau_budget_nomem();
	*out = p;
	return 0;
}

void tau_budget_pool_free(tau_budget_pool *pool)
{
	if (pool == NULL)
		return;
	for (size_t i = 0; i < pool->n_classes; i++) {
		tau_budget_class *c = &pool->classes[i];

		for (size_t j = 0; j < c->n_resources; j++)
			free(c->resources[j].name);
		tau_free_many(c->resources, c->name);
	}
	tau_free_many(pool->classes, pool);
}

/* Find or insert the class; *cls receives it. */
static int pool_class(tau_budget_class **cls, tau_budget_pool *pool, const char *gpu_class)
{
	void *rec;
	int rc;

	if (pool == NULL || gpu_class == NULL || gpu_class[0] == '\0')
		return tau_error_set(TAU_EINVAL, "pool snapshot: empty GPU class");
	rc = tau_budget_sorted_add(&rec, (void **)&pool->classes, &pool->n_classes,
	                           &pool->cap_classes, sizeof(*pool->classes), gpu_class);
	if (rc < 0)
		return rc;
	*cls = rec;
	return 0;
}

int tau_budget_pool_add_class(tau_budget_pool *pool, const char *gpu_class)
{
	tau_budget_class *c;

	return pool_class(&c, pool, gpu_class);
}

int tau_budget_pool_set(tau_budget_pool *pool, const char *gpu_class, const char *resource,
                        const tau_quantity *total)
{
	tau_budget_class *c = NULL;
	void *rec;
	int rc;

	if (resource == NULL || resource[0] == '\0' || total == NULL)
		return tau_error_set(TAU_EINVAL, "pool snapshot: empty resource name or quantity");
	if (tau_quantity_sign(total) < 0)
		return tau_error_set(TAU_EINVAL, "pool snapshot: class %s resource %s is negative",
		                     gpu_class != NULL ? gpu_class : "", resource);
	if ((rc = pool_class(&c, pool, gpu_class)) < 0)
		return rc;
	rc = tau_budget_sorted_add(&rec, (void **)&c->resources, &c->n_resources, &c->cap_resources,
	                           sizeof(*c->resources), resource);
	if (rc == 0)
		return tau_error_set(TAU_EINVAL, "pool snapshot: class %s resource %s set twice",
		                     gpu_class, resource);
	if (rc < 0)
		return rc;
	((tau_budget_resource *)rec)->total = *total;
	return 0;
}

int tau_budget_pool_from_inventory(tau_budget_pool **out, const tau_pool *inventory)
{
	tau_budget_pool *p = NULL;
	char text[TAU_QUANTITY_STR_MAX];
	tau_quantity q;
	int rc;

	if (out == NULL || inventory == NULL)
		return tau_error_set(TAU_EINVAL, "pool snapshot: no inventory pool");
	if ((rc = tau_budget_pool_new(&p)) < 0)
		return rc;
	for (size_t i = 0; i < tau_pool_flavor_count(inventory); i++) {
		const tau_pool_flavor *f = tau_pool_flavor_at(inventory, i);

		if ((rc = tau_budget_pool_add_class(p, f->name)) < 0)
			goto fail;
		for (size_t j = 0; j < f->n_resources; j++) {
			/* Through the text so the notation is the pool's order-free one. */
			if ((rc = tau_pool_sum_format(text, sizeof(text), &f->resources[j])) < 0 ||
			    (rc = tau_quantity_parse_str(&q, text)) < 0 ||
			    (rc = tau_budget_pool_set(p, f->name, f->resources[j].name, &q)) < 0)
				goto fail;
		}
	}
	*out = p;
	return 0;
fail:
	tau_budget_pool_free(p);
	return rc;
}
