// Prints gemini-cli-core's declarations of the tools the geminicli toolset offers as
// [{name, props: {param: type}, required}] (run from the directory holding node_modules).
const base = process.cwd() + '/node_modules/@google/gemini-cli-core/dist/src/tools/definitions/model-family-sets/default-legacy.js';
const { DEFAULT_LEGACY_SET: s } = await import(base);
const pick = (d) => ({
  name: d.name,
  props: Object.fromEntries(Object.entries(d.parametersJsonSchema.properties).map(([k, v]) => [k, v.type])),
  required: d.parametersJsonSchema.required,
});
const out = ['glob', 'grep_search_ripgrep', 'list_directory', 'read_file', 'read_many_files', 'replace', 'write_file']
  .map((k) => pick(s[k]));
out.push(pick(s.run_shell_command(false, false, false)));
console.log(JSON.stringify(out));
