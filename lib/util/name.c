/* name.c — name validation. Names become directory names and Kubernetes object names, so
 * nothing but [a-z0-9] may pass: no '/', no '.', no way to climb out of a state directory. */
#include "name.h"

#include <string.h>

/* The rule, with the reason worded for what the name names ("session", "sandbox"). */
static int check(const char *name, const char *what, struct sbx_err *e)
{
	size_t i, n = name ? strlen(name) : 0;

	for (i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
			break;
	}
	if (n == 0 || i < n)
		return err_set(e, SBX_EINVAL, "%s name must be lowercase alphanumeric", what);
	if (n > NAME_MAX_LEN)
		return err_set(e, SBX_EINVAL, "%s name must be no more than %d characters long",
			       what, NAME_MAX_LEN);
	return 0;
}

int name_check(const char *name, struct sbx_err *e)
{
	return check(name, "session", e);
}

int sandbox_name_check(const char *name, struct sbx_err *e)
{
	return check(name, "sandbox", e);
}

int name_given_check(enum name_kind kind, const char *name, struct sbx_err *e)
{
	const char *what = kind == NAME_SANDBOX ? "sandbox" : "session";

	if (check(name, what, e) < 0)
		return err_prefix(e, "invalid %s name \"%s\"", what, name ? name : "");
	return 0;
}

int namespace_check(const char *ns, struct sbx_err *e)
{
	size_t i, n = ns ? strlen(ns) : 0;

	if (n == 0 || n > 63)
		return err_set(e, SBX_EINVAL, "invalid namespace \"%s\": must be 1 to 63 characters",
			       ns ? ns : "");
	for (i = 0; i < n; i++) {
		char c = ns[i];
		int ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
			 (c == '-' && i > 0 && i < n - 1);
		if (!ok)
			return err_set(e, SBX_EINVAL,
				       "invalid namespace \"%s\": must be lowercase alphanumeric or '-', "
				       "starting and ending with an alphanumeric character", ns);
	}
	return 0;
}
