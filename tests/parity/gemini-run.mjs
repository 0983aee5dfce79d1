// Runs tool calls through gemini-cli-core 0.61.0's real tool classes, headless, as its
// scheduler would: args CORE CASES ROOT OUT. CORE holds node_modules/@google/gemini-cli-core;
// CASES is JSON lines {id, tool, params}; each call runs with target directory ROOT/<id>.
// OUT gets one JSON line per call: {id, error} (the message the model sees on failure) or
// {id, output} (llmContent, text parts joined by "\n", run_shell_command cut as the
// scheduler cuts it: formatTruncatedToolOutput over the threshold, whole text saved).
import fs from 'node:fs';
import path from 'node:path';

const [core, casesFile, root, outFile] = process.argv.slice(2);
const base = path.join(core, 'node_modules/@google/gemini-cli-core/dist/src/');
const quiet = () => {};
console.log = console.info = console.debug = console.warn = console.error = quiet;
const { Config } = await import(base + 'config/config.js');
const { formatTruncatedToolOutput, saveTruncatedToolOutput } = await import(base + 'utils/fileUtils.js');
const classes = {
	read_file: (await import(base + 'tools/read-file.js')).ReadFileTool,
	write_file: (await import(base + 'tools/write-file.js')).WriteFileTool,
	replace: (await import(base + 'tools/edit.js')).EditTool,
	glob: (await import(base + 'tools/glob.js')).GlobTool,
	grep_search: (await import(base + 'tools/ripGrep.js')).RipGrepTool,
	list_directory: (await import(base + 'tools/ls.js')).LSTool,
	read_many_files: (await import(base + 'tools/read-many-files.js')).ReadManyFilesTool,
	run_shell_command: (await import(base + 'tools/shell.js')).ShellTool,
};

const text = (c) => typeof c === 'string' ? c
	: (Array.isArray(c) ? c : [c]).map((p) => typeof p === 'string' ? p : p.text ?? JSON.stringify(p)).join('\n');

const out = fs.openSync(outFile, 'w');
for (const line of fs.readFileSync(casesFile, 'utf8').split('\n').filter(Boolean)) {
	const c = JSON.parse(line);
	const dir = path.join(root, c.id);
	// gemini-cli runs in its project: rg's globs are relative to the process's directory
	process.chdir(dir);
	const config = new Config({ sessionId: 'parity', targetDir: dir, cwd: dir, debugMode: false,
		model: 'gemini-2.5-pro' });
	// write_file hands the (unused: LLM correction is off) client to its content check
	config.getBaseLlmClient = () => ({});
	// the project's temp dir (shell output files, edit checkpoints) under its own name: the
	// project registry gemini-cli would consult scans every project registered before
	config.storage.projectIdentifier = c.id;
	const Tool = classes[c.tool];
	const tool = c.tool === 'run_shell_command' ? new Tool({ config }, undefined) : new Tool(config, undefined);
	let r;
	try {
		r = await tool.validateBuildAndExecute(c.params, new AbortController().signal);
	} catch (e) {
		r = { error: { message: String(e?.message ?? e) } };
	}
	let res;
	if (r.error) {
		res = { id: c.id, error: r.error.message };
	} else {
		let o = text(r.llmContent);
		const threshold = config.getTruncateToolOutputThreshold();
		if (c.tool === 'run_shell_command' && threshold > 0 && o.length > threshold) {
			const { outputFile } = await saveTruncatedToolOutput(o, c.tool, c.id,
				config.storage.getProjectTempDir(), 'parity');
			o = formatTruncatedToolOutput(o, outputFile, threshold);
		}
		res = { id: c.id, output: o };
	}
	fs.writeSync(out, JSON.stringify(res) + '\n');
}
fs.closeSync(out);
process.exit(0);
