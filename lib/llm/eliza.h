/* eliza.h — the built-in fake model "fake-eliza": deterministic answers with no network, so the
 * agent plumbing (tool calls included) can be run and tested without an API key. The rules are
 * upstream's: report a tool result, turn "run: <command>" into a call of the shell tool the
 * request offers (run_shell_command when its tools have it, as the geminicli toolset's do,
 * else run_command), else reflect the user's last words back.
 * Ownership: eliza_reply returns a new json_object reference; the caller puts it. */
#ifndef SBX_ELIZA_H
#define SBX_ELIZA_H

#include <json-c/json.h>

/* The model name that selects the fake. */
#define ELIZA_MODEL "fake-eliza"

/* The whole chat completion response ({"id":"fake-eliza","choices":[…]}) to messages, an array
 * of message objects, given the request's tools (its "tools" array); either may be NULL or
 * empty. Never fails. */
struct json_object *eliza_reply(struct json_object *messages, struct json_object *tools);

#endif
