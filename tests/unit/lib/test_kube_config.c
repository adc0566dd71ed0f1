/*
 * test_kube_config.c - kubeconfig parsing, merging, context resolution,
 * file loading errors and in-cluster configuration.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tau/error.h"
#include "tau/kube.h"
#include "tau/kubeconfig.h"

/* base64("CA-PEM") = Q0EtUEVN, base64("CERT") = Q0VSVA==, base64("KEY") = S0VZ */
static const char two_contexts[] = "apiVersion: v1\n"
                                   "kind: Config\n"
                                   "clusters:\n"
                                   "- name: inline\n"
                                   "  cluster:\n"
                                   "    server: https://10.0.0.1:6443/\n"
                                   "    certificate-authority-data: Q0EtUEVN\n"
                                   "- name: files\n"
                                   "  cluster:\n"
                                   "    server: https://files.example:443\n"
                                   "    certificate-authority: certs/ca.crt\n"
                                   "    insecure-skip-tls-verify: true\n"
                                   "users:\n"
                                   "- name: alice\n"
                                   "  user:\n"
                                   "    client-certificate-data: Q0VSVA==\n"
                                   "    client-key-data: S0VZ\n"
                                   "- name: bob\n"
                                   "  user:\n"
                                   "    tokenFile: /abs/token\n"
                                   "    client-certificate: bob.crt\n"
                                   "    client-key: bob.key\n"
                                   "- name: carol\n"
                                   "  user:\n"
                                   "    token: s3cret\n"
                                   "contexts:\n"
                                   "- name: a\n"
                                   "  context: {cluster: inline, user: alice, namespace: team-a}\n"
                                   "- name: b\n"
                                   "  context:\n"
                                   "    cluster: files\n"
                                   "    user: bob\n"
                                   "- name: c\n"
                                   "  context: {cluster: files, user: carol}\n"
                                   "- name: broken\n"
                                   "  context: {cluster: nowhere, user: alice}\n"
                                   "- name: nouser\n"
                                   "  context: {cluster: inline, user: ghost}\n"
                                   "current-context: a\n";

static void test_current_context_inline_data(void **state)
{
	tau_kubeconfig *kc = NULL;
	tau_kube_config *cfg = NULL;

	(void)state;
	assert_int_equal(tau_kubeconfig_parse(&kc, two_contexts, strlen(two_contexts), "/etc/kube"),
	                 0);
	assert_string_equal(tau_kubeconfig_current_context(kc), "a");
	assert_int_equal(tau_kubeconfig_resolve(&cfg, kc, NULL), 0);
	assert_string_equal(cfg->server, "https://10.0.0.1:6443"); /* trailing slash dropped */
	assert_string_equal(cfg->context, "a");
	assert_string_equal(cfg->namespace, "team-a");
	assert_int_equal(cfg->ca_len, 6);
	assert_memory_equal(cfg->ca_data, "CA-PEM", 6);
	assert_null(cfg->ca_file);
	assert_int_equal(cfg->cert_len, 4);
	assert_memory_equal(cfg->cert_data, "CERT", 4);
	assert_int_equal(cfg->key_len, 3);
	assert_memory_equal(cfg->key_data, "KEY", 3);
	assert_null(cfg->token);
	assert_false(cfg->insecure_skip_tls_verify);
	tau_kube_config_free(cfg);
	tau_kubeconfig_free(kc);
}

static void test_named_context_files(void **state)
{
	tau_kubeconfig *kc = NULL;
	tau_kube_config *cfg = NULL;

	(void)state;
	assert_int_equal(tau_kubeconfig_parse(&kc, two_contexts, strlen(two_contexts), "/etc/kube"),
	                 0);
	assert_int_equal(tau_kubeconfig_resolve(&cfg, kc, "b"), 0);
	assert_string_equal(cfg->server, "https://files.example:443");
	assert_string_equal(cfg->namespace, "default");
	assert_string_equal(cfg->ca_file, "/etc/kube/certs/ca.crt");
	assert_null(cfg->ca_data);
	assert_true(cfg->insecure_skip_tls_verify);
	assert_string_equal(cfg->token_file, "/abs/token"); /* absolute stays */
	assert_string_equal(cfg->cert_file, "/etc/kube/bob.crt");
	assert_string_equal(cfg->key_file, "/etc/kube/bob.key");
	tau_kube_config_free(cfg);
	cfg = NULL;
	assert_int_equal(tau_kubeconfig_resolve(&cfg, kc, "c"), 0);
	assert_string_equal(cfg->token, "s3cret");
	assert_null(cfg->token_file);
	tau_kube_config_free(cfg);
	tau_kubeconfig_free(kc);
}

static void test_resolve_errors(void **state)
{
	tau_kubeconfig *kc = NULL;
	tau_kube_config *cfg = NULL;

	(void)state;
	assert_int_equal(tau_kubeconfig_parse(&kc, two_contexts, strlen(two_contexts), NULL), 0);
	assert_int_equal(tau_kubeconfig_resolve(&cfg, kc, "missing"), -TAU_ENOTFOUND);
	assert_non_null(strstr(tau_error_last()->msg, "context \"missing\" does not exist"));
	assert_int_equal(tau_kubeconfig_resolve(&cfg, kc, "broken"), -TAU_ENOTFOUND);
	assert_non_null(strstr(tau_error_last()->msg, "cluster \"nowhere\""));
	assert_int_equal(tau_kubeconfig_resolve(&cfg, kc, "nouser"), -TAU_ENOTFOUND);
	assert_non_null(strstr(tau_error_last()->msg, "user \"ghost\""));
	assert_null(cfg);
	tau_kubeconfig_free(kc);
}

static void expect_parse_error(const char *text, int code, const char *needle)
{
	tau_kubeconfig *kc = NULL;
	tau_kube_config *cfg = NULL;
	int rc = tau_kubeconfig_parse(&kc, text, strlen(text), NULL);

	if (rc == 0) {
		rc = tau_kubeconfig_resolve(&cfg, kc, NULL);
		tau_kubeconfig_free(kc);
		tau_kube_config_free(cfg);
	}
	assert_int_equal(rc, code);
	if (needle && strstr(tau_error_last()->msg, needle) == NULL)
		fail_msg("message \"%s\" lacks \"%s\"", tau_error_last()->msg, needle);
}

static void test_malformed(void **state)
{
	(void)state;
	expect_parse_error("clusters: [unclosed\n", -TAU_EINVAL, "invalid YAML");
	expect_parse_error("- just\n- a list\n", -TAU_EINVAL, "not a mapping");
	expect_parse_error("clusters: {a: b}\n", -TAU_EINVAL, "\"clusters\" must be a list");
	expect_parse_error("clusters:\n- cluster: {server: x}\n", -TAU_EINVAL, "has no name");
	expect_parse_error("clusters:\n- name: c\n  cluster: {server: [1]}\n", -TAU_EINVAL,
	                   "\"server\" must be a string");
	expect_parse_error("clusters:\n- name: c\n  cluster: {server: x, "
	                   "insecure-skip-tls-verify: maybe}\n",
	                   -TAU_EINVAL, "true or false");
	/* Resolution-time errors. */
	expect_parse_error("current-context: x\n", -TAU_ENOTFOUND, "context \"x\" does not exist");
	expect_parse_error("{}\n", -TAU_ENOTFOUND, "current-context is not set");
	expect_parse_error("clusters:\n- name: c\n  cluster: {certificate-authority-data: Q0E=}\n"
	                   "contexts:\n- name: x\n  context: {cluster: c}\ncurrent-context: x\n",
	                   -TAU_EINVAL, "has no server");
	expect_parse_error("clusters:\n- name: c\n  cluster: {server: h, "
	                   "certificate-authority-data: '!!notb64'}\n"
	                   "contexts:\n- name: x\n  context: {cluster: c}\ncurrent-context: x\n",
	                   -TAU_EINVAL, "not valid base64");
	expect_parse_error("clusters:\n- name: c\n  cluster: {server: h}\n"
	                   "users:\n- name: u\n  user: {client-certificate-data: Q0E=}\n"
	                   "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
	                   "current-context: x\n",
	                   -TAU_EINVAL, "no client key");
	expect_parse_error("clusters:\n- name: c\n  cluster: {server: h}\n"
	                   "users:\n- name: u\n  user: {exec: {command: aws}}\n"
	                   "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
	                   "current-context: x\n",
	                   -TAU_EINVAL, "exec");
}

static void test_empty_and_null(void **state)
{
	tau_kubeconfig *kc = NULL;

	(void)state;
	assert_int_equal(tau_kubeconfig_parse(&kc, "", 0, NULL), 0);
	assert_null(tau_kubeconfig_current_context(kc));
	tau_kubeconfig_free(kc);
	kc = NULL;
	{
		static const char nulls[] = "clusters: ~\nusers: null\n";

		assert_int_equal(tau_kubeconfig_parse(&kc, nulls, strlen(nulls), NULL), 0);
	}
	tau_kubeconfig_free(kc);
}

static void test_merge_first_wins(void **state)
{
	static const char first[] = "clusters:\n- name: shared\n  cluster: {server: https://one}\n"
	                            "contexts:\n- name: ctx\n  context: {cluster: shared}\n";
	static const char second[] = "clusters:\n- name: shared\n  cluster: {server: https://two}\n"
	                             "- name: extra\n  cluster: {server: https://extra}\n"
	                             "contexts:\n- name: ctx\n  context: {cluster: extra}\n"
	                             "- name: other\n  context: {cluster: extra}\n"
	                             "current-context: ctx\n";
	static const char third[] = "current-context: other\n";
	tau_kubeconfig *a = NULL, *b = NULL, *c = NULL;
	tau_kube_config *cfg = NULL;

	(void)state;
	assert_int_equal(tau_kubeconfig_parse(&a, first, strlen(first), NULL), 0);
	assert_int_equal(tau_kubeconfig_parse(&b, second, strlen(second), NULL), 0);
	assert_int_equal(tau_kubeconfig_parse(&c, third, strlen(third), NULL), 0);
	assert_null(tau_kubeconfig_current_context(a));
	assert_int_equal(tau_kubeconfig_merge(a, b), 0);
	assert_int_equal(tau_kubeconfig_merge(a, c), 0);
	/* current-context from the first file that sets one. */
	assert_string_equal(tau_kubeconfig_current_context(a), "ctx");
	assert_int_equal(tau_kubeconfig_resolve(&cfg, a, NULL), 0);
	assert_string_equal(cfg->server, "https://one"); /* ctx and shared from file one */
	tau_kube_config_free(cfg);
	cfg = NULL;
	assert_int_equal(tau_kubeconfig_resolve(&cfg, a, "other"), 0);
	assert_string_equal(cfg->server, "https://extra");
	tau_kube_config_free(cfg);
	tau_kubeconfig_free(a);
	tau_kubeconfig_free(b);
	tau_kubeconfig_free(c);
}

/* ---- file loading ---- */

static char tmpdir[256];

static void write_file(const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int make_tmpdir(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/tau-kubecfg-XXXXXX");
	assert_non_null(mkdtemp(tmpdir));
	return 0;
}

static int remove_tmpdir(void **state)
{
	char cmd[300];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_load_files(void **state)
{
	char path1[512], path2[512], list[1100];
	tau_kube_config_options opts = {0};
	tau_kube_config *cfg = NULL;

	(void)state;
	write_file("ca.pem", "-----BEGIN CERTIFICATE-----\nX\n-----END CERTIFICATE-----\n");
	write_file("tok", "abc\n");
	write_file("one.yaml", "clusters:\n- name: k\n  cluster: {server: 'https://k:1', "
	                       "certificate-authority: ca.pem}\n"
	                       "users:\n- name: u\n  user: {tokenFile: tok}\n"
	                       "contexts:\n- name: main\n  context: {cluster: k, user: u}\n");
	write_file("two.yaml", "current-context: main\n"
	                       "contexts:\n- name: main\n  context: {cluster: none}\n"
	                       "- name: bad-ca\n  context: {cluster: badca}\n"
	                       "clusters:\n- name: badca\n  cluster: {server: 'https://x', "
	                       "certificate-authority: /nonexistent/ca.pem}\n");
	snprintf(path1, sizeof(path1), "%s/one.yaml", tmpdir);
	snprintf(path2, sizeof(path2), "%s/two.yaml", tmpdir);
	snprintf(list, sizeof(list), "%s:/nonexistent/skip.yaml:%s", path1, path2);
	setenv("KUBECONFIG", list, 1);
	assert_int_equal(tau_kube_config_load(&cfg, &opts), 0);
	assert_string_equal(cfg->server, "https://k:1");
	assert_non_null(cfg->ca_data);
	assert_non_null(strstr((const char *)cfg->ca_data, "BEGIN CERTIFICATE"));
	assert_non_null(strstr(cfg->token_file, "/tok"));
	tau_kube_config_free(cfg);
	cfg = NULL;

	/* A referenced file that cannot be read is reported with its name. */
	opts.context = "bad-ca";
	assert_int_equal(tau_kube_config_load(&cfg, &opts), -TAU_EIO);
	assert_non_null(strstr(tau_error_last()->msg, "/nonexistent/ca.pem"));
	/* Missing context. */
	opts.context = "nope";
	assert_int_equal(tau_kube_config_load(&cfg, &opts), -TAU_ENOTFOUND);
	assert_non_null(strstr(tau_error_last()->msg, "\"nope\""));
	/* --kubeconfig overrides KUBECONFIG; an unreadable one is an I/O error. */
	opts.context = NULL;
	opts.kubeconfig = "/nonexistent/kubeconfig";
	assert_int_equal(tau_kube_config_load(&cfg, &opts), -TAU_EIO);
	assert_non_null(strstr(tau_error_last()->msg, "/nonexistent/kubeconfig"));
	opts.kubeconfig = path1;
	assert_int_equal(tau_kube_config_load(&cfg, &opts), -TAU_ENOTFOUND); /* no current ctx */
	opts.context = "main";
	assert_int_equal(tau_kube_config_load(&cfg, &opts), 0);
	tau_kube_config_free(cfg);
	cfg = NULL;
	setenv("KUBECONFIG", "/nonexistent/a:/nonexistent/b", 1);
	opts.kubeconfig = NULL;
	assert_int_equal(tau_kube_config_load(&cfg, &opts), -TAU_ENOTFOUND);
	unsetenv("KUBECONFIG");
}

static void test_in_cluster(void **state)
{
	char sa[300];
	tau_kube_config *cfg = NULL;

	(void)state;
	snprintf(sa, sizeof(sa), "%s/sa", tmpdir);
	mkdir(sa, 0700);
	write_file("sa/token", "tok-1\n");
	write_file("sa/namespace", "  tau-system\n");
	unsetenv("KUBERNETES_SERVICE_HOST");
	assert_int_equal(tau_kube_config_in_cluster(&cfg, sa), -TAU_ENOTFOUND);
	assert_non_null(strstr(tau_error_last()->msg, "KUBERNETES_SERVICE_HOST"));
	setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	unsetenv("POD_NAMESPACE");
	assert_int_equal(tau_kube_config_in_cluster(&cfg, sa), 0);
	assert_string_equal(cfg->server, "https://10.96.0.1:443");
	assert_string_equal(cfg->namespace, "tau-system");
	assert_non_null(strstr(cfg->token_file, "/sa/token"));
	assert_null(cfg->ca_data); /* no ca.crt: system store */
	tau_kube_config_free(cfg);
	cfg = NULL;
	write_file("sa/ca.crt", "PEM");
	setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
	setenv("POD_NAMESPACE", "from-env", 1);
	assert_int_equal(tau_kube_config_in_cluster(&cfg, sa), 0);
	assert_string_equal(cfg->server, "https://[fd00::1]:443");
	assert_string_equal(cfg->namespace, "from-env");
	assert_int_equal(cfg->ca_len, 3);
	tau_kube_config_free(cfg);
	cfg = NULL;
	/* Unreadable token is an error. */
	snprintf(sa, sizeof(sa), "%s/empty-sa", tmpdir);
	mkdir(sa, 0700);
	assert_int_equal(tau_kube_config_in_cluster(&cfg, sa), -TAU_EIO);
	assert_non_null(strstr(tau_error_last()->msg, "token"));
	unsetenv("KUBERNETES_SERVICE_HOST");
	unsetenv("KUBERNETES_SERVICE_PORT");
	unsetenv("POD_NAMESPACE");
}

static void test_dup(void **state)
{
	tau_kubeconfig *kc = NULL;
	tau_kube_config *cfg = NULL, *copy = NULL;

	(void)state;
	assert_int_equal(tau_kubeconfig_parse(&kc, two_contexts, strlen(two_contexts), NULL), 0);
	assert_int_equal(tau_kubeconfig_resolve(&cfg, kc, "a"), 0);
	assert_int_equal(tau_kube_config_dup(&copy, cfg), 0);
	tau_kube_config_free(cfg);
	assert_memory_equal(copy->cert_data, "CERT", 4);
	assert_string_equal(copy->namespace, "team-a");
	tau_kube_config_free(copy);
	tau_kubeconfig_free(kc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_current_context_inline_data),
	        cmocka_unit_test(test_named_context_files),
	        cmocka_unit_test(test_resolve_errors),
	        cmocka_unit_test(test_malformed),
	        cmocka_unit_test(test_empty_and_null),
	        cmocka_unit_test(test_merge_first_wins),
	        cmocka_unit_test(test_load_files),
	        cmocka_unit_test(test_in_cluster),
	        cmocka_unit_test(test_dup),
	};

	return cmocka_run_group_tests(tests, make_tmpdir, remove_tmpdir);
}
