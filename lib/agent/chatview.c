/* chatview.c — the chat's terminal presentation (upstream's CLI output). */
#include "chatview.h"

#include <string.h>

#include "gojson.h"
#include "termtext.h"
#include "xalloc.h"

#define RULE "================================================================================\n"

/* label, then text (from the model or the user's history) as termtext shows it, a newline. */
static void shown(FILE *out, const char *label, const char *text)
{
	fputs(label, out);
	termtext_write(out, text ? text : "", text ? strlen(text) : 0, TERMTEXT_TEXT);
	fputc('\n', out);
}

bool chatview_banner(FILE *out, struct agent_session *s, const char *why)
{
	struct json_object *h = agent_session_history(s), *m, *v;
	size_t i, n = json_object_array_length(h);

	if (agent_session_is_new(s)) {
		fprintf(out, RULE "Welcome to the Sandboxed Tools example!\nSession Name: %s\n"
			"Sandbox Backend: %s (%s)\n"
			"Type your message (or '/exit' or '/quit' to quit):\n" RULE,
			agent_session_name(s), agent_session_backend(s), why);
		return false;
	}
	fprintf(out, RULE "Resumed session \"%s\" with %zu messages in history:\n" RULE,
		agent_session_name(s), n);
	for (i = 0; i < n; i++) {
		const char *role, *content;
		m = json_object_array_get_idx(h, i);
		role = json_object_object_get_ex(m, "role", &v) ? json_object_get_string(v) : "";
		content = json_object_object_get_ex(m, "content", &v) && v &&
			  json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
		if (strcmp(role, "user") == 0)
			shown(out, "User> ", content);
		else if (strcmp(role, "assistant") == 0 && content && *content)
			shown(out, "Agent> ", content);
	}
	return true;
}

void chatview_delta(void *view, const char *text, size_t len)
{
	struct chatview *v = view;

	if (!v->line_open)
		fputs("\nAgent> ", v->out);
	v->line_open = true;
	termtext_write(v->out, text, len, TERMTEXT_TEXT);
	fflush(v->out);
}

void chatview_assistant(void *view, struct json_object *msg, bool final)
{
	struct chatview *v = view;
	struct json_object *c;

	if (v->line_open)
		fputs("\n", v->out);
	else if (final)	/* nothing streamed: upstream's "\nAgent> <text>\n" in one piece */
		shown(v->out, "\nAgent> ", json_object_object_get_ex(msg, "content", &c) && c
		      ? json_object_get_string(c) : "");
	v->line_open = false;
	fflush(v->out);
}

void chatview_end_turn(struct chatview *v)
{
	if (v->line_open)
		fputs("\n", v->out);
	v->line_open = false;
	fflush(v->out);
}

char *chatview_trim(char *s)
{
	static const char space[] = " \t\n\v\f\r";
	char *end;

	while (*s && strchr(space, *s))
		s++;
	end = s + strlen(s);
	while (end > s && strchr(space, end[-1]))
		*--end = '\0';
	return s;
}

char *chatview_args(const char *arguments)
{
	const char *why;
	struct json_object *o = gojson_parse(arguments, strlen(arguments), &why);
	char *text;

	if (o == NULL)
		return xstrdup(arguments);
	text = xstrdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
							JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return text;
}
